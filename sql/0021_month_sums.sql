-- 0021: month sums. An open month's reports used to sum every posting of
-- the months since the last snapshot on every read (half a second on a
-- 10-million-posting ledger). Posting sets are append-only and sealed, so
-- what a set adds to a month never changes: the sums of the sets visible
-- in a database snapshot S are final, and the month's figures now are
-- those sums plus the sets S did not see. reports.RefreshMonthSums stores
-- such sums off the hot path; every report reads them plus that delta in
-- the same statement, so a summary that is old is slower to read, never
-- wrong, and no posting writes here (no row every posting updates).
--
-- Which sets S did not see is the database's to say, not ids': a set with
-- a lower id can commit after one with a higher id. posting_sets'
-- created_xid (stamped by its trigger, sql/0012) and S decide it:
-- NOT pg_visible_in_snapshot(created_xid, S), and every such set has
-- created_xid >= pg_snapshot_xmin(S), which the index below finds, per
-- month. (One more index entry per set, on an ever-growing key, like the
-- primary key's.)

CREATE INDEX ix_posting_sets_month_xid ON posting_sets (competence_month, created_xid);

-- One row per summed month: the snapshot its lines are of.
CREATE TABLE month_sums (
    month       date        PRIMARY KEY,
    snapshot    pg_snapshot NOT NULL,
    computed_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ck_month_sums_first_day CHECK (month = date_trunc('month', month)::date)
);

-- The sums of the month's postings from sets visible in its snapshot, per
-- account and kind of set. account_id 0 is the revenue accounts together
-- (those under income:revenue in its currency), whose sets are counted
-- once however many revenue legs they have (the income statement's
-- counts); for other rows sets is 0. debits and credits are positive.
CREATE TABLE month_sum_lines (
    month      date    NOT NULL REFERENCES month_sums (month) ON DELETE CASCADE,
    account_id bigint  NOT NULL,
    kind       text    NOT NULL,
    debits     numeric NOT NULL,
    credits    numeric NOT NULL,
    sets       bigint  NOT NULL,
    PRIMARY KEY (month, account_id, kind),
    CONSTRAINT ck_month_sum_lines_positive CHECK (debits >= 0 AND credits >= 0 AND sets >= 0)
);
