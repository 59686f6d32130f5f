-- 0039: a bcb-pix item or devolução razao cannot book is a divergence of
-- its own, not a refused callback; a refund keeps the PSP's return id and
-- natureza; a return made under the MED is booked apart from the
-- merchant's own refunds.

-- An authentic event razao reads but cannot book (scheme.KindUnbookable):
-- stored under the key it would have had, applied as a divergence.
ALTER TABLE inbox DROP CONSTRAINT ck_inbox_kind;
ALTER TABLE inbox ADD CONSTRAINT ck_inbox_kind CHECK (kind IN ('paid', 'refunded', 'failed', 'ignored', 'disputed',
    'malformed', 'unbookable'));

-- Why: a DEVOLVIDO without horario.liquidacao (money moved, on a date the
-- PSP does not state), a devolução status or a natureza razao does not know
-- (the specification says new enum values are a compatible change).
ALTER TABLE divergences DROP CONSTRAINT ck_divergences_reason;
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_reason CHECK (reason IN ('unknown_charge', 'amount_mismatch',
    'currency_mismatch', 'refund_exceeds_paid', 'refund_amount_missing', 'malformed', 'disputed', 'second_payment',
    'processing_failed', 'refund_of_other_payment', 'refund_amount_changed', 'refund_without_payment',
    'merchant_mismatch', 'fee_mismatch', 'refund_amount_mismatch', 'refund_not_settled', 'phantom', 'invalid_line',
    'divergent_in_inbox', 'refund_settlement_unknown', 'unknown_refund_status', 'unknown_refund_nature'));

-- The ledger's record of a refund is its posting set: it keeps the PSP's
-- id of the transfer back (bcb-pix rtrId, the pacs.004's
-- ReturnIdentification) and the refund's natureza (ORIGINAL, RETIRADA,
-- MED_OPERACIONAL, MED_FRAUDE, MED_PIX_AUTOMATICO...), as stated; NULL
-- where the PSP states none. Only a refund set carries them.
ALTER TABLE posting_sets
    ADD COLUMN return_id     text,
    ADD COLUMN refund_nature text,
    ADD CONSTRAINT ck_posting_sets_refund_details CHECK (kind = 'refund' OR (return_id IS NULL AND refund_nature IS NULL)),
    ADD CONSTRAINT ck_posting_sets_return_id CHECK (length(return_id) BETWEEN 1 AND 64),
    ADD CONSTRAINT ck_posting_sets_refund_nature CHECK (refund_nature ~ '^[A-Z][A-Z0-9_]{0,34}$');

-- A return made under the MED (Mecanismo Especial de Devolução: fraud, an
-- operational failure, Pix Automático) is not the merchant's own refund:
-- it is not a sale undone but money the MED took back, an expense line of
-- its own in the income statement and the trial balance.
INSERT INTO accounts (code, type, normal_side, parent_id)
SELECT 'expenses:med-returns', p.type, p.normal_side, p.id FROM accounts p WHERE p.code = 'expenses'
ON CONFLICT (code) DO NOTHING;

-- A refund booked from the statement keeps them too: its line carries
-- them to the inbox as its webhook would have.
ALTER TABLE reconciliation_lines
    ADD COLUMN return_id     text,
    ADD COLUMN refund_nature text;
