-- 0040: what a Pix's valor is made of (componentesValor) is booked as what
-- each part is. The sale is `original`, on income:revenue as before. Cash
-- handed over the counter (Pix Saque, Pix Troco) came in by Pix and went
-- out of the till: never revenue, it is credited to the till, an asset
-- whose other side (the cash put into it) razao does not see. Interest
-- and fines of a charge with a due date (cobv) are income of their own;
-- its rebates and discounts are expenses of their own.
--
-- The accounts take their type and normal side from their root, as the
-- standard chart of 0001 does, in the ledger's default currency.
INSERT INTO accounts (code, type, normal_side, parent_id)
SELECT c.code, p.type, p.normal_side, p.id
FROM (VALUES
    ('assets:till', 'assets'),
    ('income:interest', 'income'),
    ('income:fines', 'income'),
    ('expenses:rebates', 'expenses'),
    ('expenses:discounts', 'expenses')
) AS c (code, parent)
JOIN accounts p ON p.code = c.parent
ON CONFLICT (code) DO NOTHING;
INSERT INTO accounts (code, type, normal_side, parent_id)
SELECT c.code, p.type, p.normal_side, p.id
FROM (VALUES
    ('assets:till:pix-withdrawals', 'assets:till'),
    ('assets:till:pix-change', 'assets:till')
) AS c (code, parent)
JOIN accounts p ON p.code = c.parent
ON CONFLICT (code) DO NOTHING;

-- The income statement shows them as lines of their own, so a closed
-- month's snapshot keeps them too. No posting could reach these accounts
-- before they existed: every month closed before this migration had 0 of
-- each, which is what the default says.
ALTER TABLE month_snapshots
    ADD COLUMN interest  bigint NOT NULL DEFAULT 0,
    ADD COLUMN fines     bigint NOT NULL DEFAULT 0,
    ADD COLUMN rebates   bigint NOT NULL DEFAULT 0,
    ADD COLUMN discounts bigint NOT NULL DEFAULT 0;

-- A statement's Pix carries its parts too, and one found only there is
-- booked as its webhook would have been: a line keeps them (in
-- money.Parts' order: original, saque, troco, juros, multa, abatimento,
-- desconto; NULL when the statement says nothing). Whether a refund
-- gives back cash handed over the counter is its natureza (RETIRADA).
ALTER TABLE reconciliation_lines
    ADD COLUMN parts    bigint[],
    ADD CONSTRAINT ck_reconciliation_lines_parts CHECK (parts IS NULL OR (cardinality(parts) = 7 AND 0 <= ALL (parts)));
