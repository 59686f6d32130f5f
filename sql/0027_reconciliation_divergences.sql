-- 0027: a difference a reconciliation run finds is a divergence like the
-- delivery path's, in the same table, listed for finance and announced by
-- divergence.opened: until now it was only a state of a row of
-- reconciliation_lines, which neither GET /v1/divergences nor the event
-- stream nor the console read.
--
-- Each divergence says where it was found (source). One of a run keeps
-- both sides: the statement's (ids, amount, fee, time) and the ledger's
-- (amount, fee, the delivery that booked it), the run and line that found
-- it first, and its key: the fact and what is wrong with it, so that
-- running a window again, or an overlapping one, opens none twice.
ALTER TABLE divergences
    ADD COLUMN source               text        NOT NULL DEFAULT 'webhook',
    ADD COLUMN reconciliation_key   text,
    ADD COLUMN endpoint             text,
    ADD COLUMN run_id               bigint      REFERENCES reconciliation_runs (id) ON DELETE SET NULL,
    ADD COLUMN run_line             bigint,
    ADD COLUMN line_kind            text,
    ADD COLUMN statement_psp_id     text,
    ADD COLUMN statement_charge_ref text,
    ADD COLUMN statement_refund_id  text,
    ADD COLUMN statement_amount     bigint,
    ADD COLUMN statement_fee        bigint,
    ADD COLUMN statement_at         timestamptz,
    ADD COLUMN ledger_refund_id     text,
    ADD COLUMN ledger_amount        bigint,
    ADD COLUMN ledger_fee           bigint,
    ADD COLUMN ledger_inbox_id      bigint,
    ADD CONSTRAINT uq_divergences_reconciliation_key UNIQUE (reconciliation_key),
    ADD CONSTRAINT ck_divergences_source CHECK (source IN ('webhook', 'reconciliation')),
    -- A run's divergence has its key and endpoint and no delivery of its
    -- own (a delivery's divergence is the delivery path's: at most one).
    ADD CONSTRAINT ck_divergences_source_fields CHECK (CASE source
        WHEN 'reconciliation' THEN reconciliation_key IS NOT NULL AND endpoint IS NOT NULL AND inbox_id IS NULL
        ELSE reconciliation_key IS NULL END);

-- The reasons a run finds besides the delivery path's: a fee other than
-- booked, a refund of another amount, a devolução the PSP never settled
-- that the ledger booked, money the ledger has and the statement lacks, a
-- line that could not be read, a delivery set aside without a divergence.
ALTER TABLE divergences DROP CONSTRAINT ck_divergences_reason;
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_reason CHECK (reason IN ('unknown_charge', 'amount_mismatch',
    'currency_mismatch', 'refund_exceeds_paid', 'refund_amount_missing', 'malformed', 'disputed', 'second_payment',
    'processing_failed', 'refund_of_other_payment', 'refund_amount_changed', 'refund_without_payment',
    'merchant_mismatch', 'fee_mismatch', 'refund_amount_mismatch', 'refund_not_settled', 'phantom', 'invalid_line',
    'divergent_in_inbox'));

-- A run's divergent line points at its divergence: the one it opened, the
-- one an earlier run opened for the same fact, or the delivery path's. No
-- foreign key: its check is an after-row trigger queued for every line a
-- statement's COPY writes (a million, with the column NULL), and only the
-- opening step sets it, from a join on the divergence itself; divergences
-- are never deleted.
ALTER TABLE reconciliation_lines ADD COLUMN divergence_id bigint;
