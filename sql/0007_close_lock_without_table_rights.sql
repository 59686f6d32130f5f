-- 0007: month close without LOCK TABLE. Closing used to lock posting_sets
-- in SHARE ROW EXCLUSIVE mode, which needs UPDATE, DELETE or TRUNCATE
-- rights on the table: the service's own role, which has none of those on
-- the ledger, could not close a month. Now every posting set insert takes a
-- shared transaction-level advisory lock, held until its commit, and a
-- close takes it exclusively: the close waits for every posting in flight,
-- and postings that start meanwhile wait for the close, then see the month
-- closed. Advisory locks need no table rights.
CREATE OR REPLACE FUNCTION ledger_refuse_closed_month() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_advisory_xact_lock_shared(7261003);
    -- Generated columns are not computed yet in a BEFORE trigger.
    IF EXISTS (SELECT 1 FROM closed_periods WHERE month = date_trunc('month', NEW.competence::timestamp)::date) THEN
        RAISE EXCEPTION 'competence month % is closed', to_char(NEW.competence, 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    RETURN NEW;
END;
$$;
