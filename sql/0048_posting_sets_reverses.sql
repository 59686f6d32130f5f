-- 0048: a reversal names the set it reverses, at most once. A reversal
-- is the mirror of an 'adjustment' or a 'payout' set (every leg negated),
-- booked as an 'adjustment' set whose reverses column holds the id of the
-- original: an ordinary balanced set for every guard of the ledger
-- (balance at commit, sealed legs, open month), and for razao verify's
-- templates and cash check, which take adjustments as they come.
-- ck_posting_sets_kind is unchanged.
--
-- uq_posting_sets_reverses makes "at most once" the database's: a second
-- reversal of one set is refused whatever the code does.
-- ck_posting_sets_reverses keeps the column on adjustments and off the
-- set itself. No foreign key: posting_sets carries none (a per-row check
-- on the ledger's hottest table), its rows are never deleted, and the one
-- writer of the column (postings.ReverseTx) reads the original first.
--
-- Adding a column without a default rewrites nothing; the check and the
-- index read the table once, in the migration's transaction.
ALTER TABLE posting_sets ADD COLUMN reverses bigint;
ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_reverses CHECK (reverses IS NULL OR (kind = 'adjustment' AND reverses <> id));
CREATE UNIQUE INDEX uq_posting_sets_reverses ON posting_sets (reverses) WHERE reverses IS NOT NULL;
