-- 0047: a divergence that stands for money is resolved by booking what
-- makes the ledger agree with the PSP's statement, in the transaction
-- that resolves it (package divergences, Book). The booking is an
-- `adjustment` set (no new kind); the divergence names it, and the
-- resolution it was.

-- Money the PSP received that belongs to no charge (a customer who paid
-- twice, a payment for a charge razao does not know) is owed to that
-- customer until it is refunded or applied; money that went back with
-- nothing to charge it to (a refund of a payment the ledger never had)
-- is a loss of its own, not a refund of a sale.
INSERT INTO accounts (code, type, normal_side, parent_id)
SELECT c.code, p.type, p.normal_side, p.id
FROM (VALUES
    ('liabilities:customer-credits', 'liabilities'),
    ('expenses:reconciliation-losses', 'expenses')
) AS c (code, parent)
JOIN accounts p ON p.code = c.parent
ON CONFLICT (code) DO NOTHING;

-- resolution: how it was resolved by booking (NULL: a note alone);
-- resolution_set_id: the set booked, one divergence per set at most;
-- resolution_credit_id: for a refund drawn from a customer's credit, the
-- divergence whose resolution booked that credit.
ALTER TABLE divergences
    ADD COLUMN resolution           text,
    ADD COLUMN resolution_set_id    bigint REFERENCES posting_sets (id),
    ADD COLUMN resolution_credit_id bigint REFERENCES divergences (id),
    ADD CONSTRAINT ck_divergences_resolution CHECK (resolution IN ('customer_credit', 'revenue', 'credit_refund',
        'loss', 'refund_difference', 'fee_difference')),
    -- A booking and its resolution go together, on a resolved divergence
    -- only: a set is never linked to an open one.
    ADD CONSTRAINT ck_divergences_resolution_booked CHECK ((resolution IS NULL) = (resolution_set_id IS NULL)
        AND (resolution_set_id IS NULL OR status = 'resolved')),
    ADD CONSTRAINT ck_divergences_resolution_credit CHECK (resolution_credit_id IS NULL OR resolution = 'credit_refund'),
    ADD CONSTRAINT uq_divergences_resolution_set UNIQUE (resolution_set_id);

-- A credit's refunds are found by the credit (what is left of it).
CREATE INDEX ix_divergences_resolution_credit ON divergences (resolution_credit_id) WHERE resolution_credit_id IS NOT NULL;
