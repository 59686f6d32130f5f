-- 0042: the income statement shows the returns made under the MED (a Pix
-- devolução of natureza MED_*, booked on expenses:med-returns by 0039) as
-- a line of their own, neither the merchant's refunds nor "other"; a
-- closed month's snapshot keeps them too.
--
-- Unlike 0040's accounts, expenses:med-returns could be posted to before
-- this column existed, and a month closed then has its MED returns inside
-- "other". A snapshot is sealed and is not rewritten: such a month's
-- column is NULL, which says its MED returns are in "other" (the income
-- statement reads 0 for the line, CheckSnapshots folds the ledger's MED
-- returns into "other" before comparing), and its files are exported
-- again byte for byte. Every snapshot written from now on states the
-- figure, 0 included.
ALTER TABLE month_snapshots
    ADD COLUMN med_returns bigint;
