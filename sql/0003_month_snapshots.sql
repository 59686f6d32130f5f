-- 0003: reports. A closed month's figures never change (the ledger refuses
-- postings into it), so they are computed once, when the month closes, and
-- stored: its trial balance and income statement become lookups whatever
-- the ledger's size, and an open month's opening balances start from the
-- last snapshot instead of from the beginning of time.
--
-- Snapshots are append-only like closed_periods: a wrong snapshot is a bug
-- to investigate (reports.CheckSnapshots recomputes them), never a row to
-- edit.

-- One row per snapshotted month, written in the transaction that closes
-- it (or by a backfill for a month closed before snapshots existed).
-- The income statement figures are those of reports.IncomeStatement, for
-- the currency of income:revenue.
CREATE TABLE month_snapshots (
    month         date        PRIMARY KEY,
    currency      char(3)     NOT NULL,
    sales         bigint      NOT NULL,
    sales_count   bigint      NOT NULL,
    refunds       bigint      NOT NULL,
    refunds_count bigint      NOT NULL,
    commission    bigint      NOT NULL,
    psp_fees      bigint      NOT NULL,
    other         bigint      NOT NULL,
    -- How many trial_balance_snapshots rows the month has: a reader can
    -- tell a complete snapshot from a damaged one.
    lines         integer     NOT NULL,
    created_xid   xid8        NOT NULL DEFAULT pg_current_xact_id(),
    created_at    timestamptz NOT NULL DEFAULT now(),
    -- Only a closed month has final figures.
    CONSTRAINT fk_month_snapshots_closed FOREIGN KEY (month) REFERENCES closed_periods (month),
    CONSTRAINT ck_month_snapshots_counts CHECK (sales_count >= 0 AND refunds_count >= 0 AND lines >= 0)
);

-- A closed month's trial balance: each account's own figures (its own
-- postings, not its descendants'), for every account the report shows:
-- those with an opening balance or activity, and their ancestors. Parents
-- are rolled up when read, from these rows only, so an account created
-- after the close never changes the report.
CREATE TABLE trial_balance_snapshots (
    month      date   NOT NULL,
    account_id bigint NOT NULL,
    opening    bigint NOT NULL,
    debits     bigint NOT NULL,
    credits    bigint NOT NULL,
    closing    bigint NOT NULL,
    CONSTRAINT pk_trial_balance_snapshots PRIMARY KEY (month, account_id),
    CONSTRAINT fk_trial_balance_snapshots_month FOREIGN KEY (month) REFERENCES month_snapshots (month),
    CONSTRAINT fk_trial_balance_snapshots_account FOREIGN KEY (account_id) REFERENCES accounts (id),
    CONSTRAINT ck_trial_balance_snapshots_sides CHECK (debits >= 0 AND credits >= 0),
    CONSTRAINT ck_trial_balance_snapshots_closing CHECK (closing = opening + debits - credits)
);

CREATE TRIGGER trg_month_snapshots_append_only BEFORE UPDATE OR DELETE ON month_snapshots
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_month_snapshots_no_truncate BEFORE TRUNCATE ON month_snapshots
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_trial_balance_snapshots_append_only BEFORE UPDATE OR DELETE ON trial_balance_snapshots
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_trial_balance_snapshots_no_truncate BEFORE TRUNCATE ON trial_balance_snapshots
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();

-- Lines join only a snapshot written by the same transaction: once
-- committed, a month's snapshot is sealed, as a posting set is.
CREATE FUNCTION reports_refuse_sealed_snapshot() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_lines n JOIN month_snapshots s ON s.month = n.month
        WHERE s.created_xid <> pg_current_xact_id()
    ) THEN
        RAISE EXCEPTION 'month snapshot is sealed: lines can only be added by the transaction that created it'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_trial_balance_snapshots_sealed';
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER trg_trial_balance_snapshots_sealed AFTER INSERT ON trial_balance_snapshots
    REFERENCING NEW TABLE AS new_lines
    FOR EACH STATEMENT EXECUTE FUNCTION reports_refuse_sealed_snapshot();

ALTER TABLE month_snapshots ENABLE ALWAYS TRIGGER trg_month_snapshots_append_only;
ALTER TABLE month_snapshots ENABLE ALWAYS TRIGGER trg_month_snapshots_no_truncate;
ALTER TABLE trial_balance_snapshots ENABLE ALWAYS TRIGGER trg_trial_balance_snapshots_append_only;
ALTER TABLE trial_balance_snapshots ENABLE ALWAYS TRIGGER trg_trial_balance_snapshots_no_truncate;
ALTER TABLE trial_balance_snapshots ENABLE ALWAYS TRIGGER trg_trial_balance_snapshots_sealed;

-- Finance pages divergences by status, oldest first.
CREATE INDEX ix_divergences_status_id ON divergences (status, id);
