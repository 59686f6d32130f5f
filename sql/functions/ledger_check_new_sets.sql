-- Guards posting_sets after each INSERT statement, on the statement's new
-- rows: trg_posting_sets_written_open (AFTER INSERT, REFERENCING NEW TABLE
-- AS new_sets, FOR EACH STATEMENT, enabled ALWAYS). Before the statement,
-- ledger_refuse_closed_month has refused any level but READ COMMITTED and
-- taken the close lock.
--
-- * No new set is in a closed month (sql/0034), checked once per statement,
--   not per row: a worker writes a batch of sets in one statement, and a
--   per-row trigger would be a good part of what writing them costs
--   (docs/performance.md, "Ledger guards once per statement").
--   closed_periods is read after the close lock was taken, in a
--   snapshot of this statement's own, so every close that can commit
--   before this transaction has.
-- * Every month up to the last closed one is closed (sql/0035). A close
--   takes only the month after the last closed one, but the first close
--   may be of any month that has ended; were only the closed months
--   themselves refused, a month before the first close would stay open
--   for ever, and a set dated in it, written after a later month closed,
--   would change that closed month's opening balances and every month's
--   after it. A new set's month must be after the last closed month,
--   which is where razao books a late event already; a month before the first
--   close that was never closed keeps the sets it had and gets no more.
-- * Each new set carries its writer's xid (sql/0012: verify judges commit
--   order by created_xid). created_xid defaults to pg_current_xact_id();
--   an INSERT that states another is refused (sql/0034), not overwritten:
--   a statement trigger checks the new rows, it cannot change them.
--
-- A logical replication apply worker fires row triggers only: on a
-- subscriber neither check runs (sql/0034). razao's ledger is written by
-- razao, not replicated into. Every comparison is between one type (see
-- ledger_check_posting_set on operators).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_check_new_sets()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    last_closed date;
    refused     date;
BEGIN
    SELECT max(c.month) INTO last_closed FROM closed_periods c;
    SELECT min(n.competence_month) INTO refused FROM new_sets n WHERE n.competence_month <= last_closed;
    IF refused IS NOT NULL THEN
        RAISE EXCEPTION 'competence month % is closed: every month up to %, the last closed, is', to_char(refused::timestamp, 'YYYY-MM'),
            to_char(last_closed::timestamp, 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    IF EXISTS (SELECT 1 FROM new_sets n WHERE n.created_xid <> pg_current_xact_id()) THEN
        RAISE EXCEPTION 'a posting set''s created_xid is the transaction that writes it'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_written_open';
    END IF;
    RETURN NULL;
END;
$function$;
