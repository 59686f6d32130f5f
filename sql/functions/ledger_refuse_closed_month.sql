-- Runs before each INSERT statement on posting_sets, before it writes a
-- row: trg_posting_sets_open_month (BEFORE INSERT, FOR EACH STATEMENT,
-- enabled ALWAYS). The month check itself runs after the statement, in
-- ledger_check_new_sets.
--
-- * READ COMMITTED only (sql/0009 refused REPEATABLE READ; sql/0012 every
--   level but READ COMMITTED): the closed-month check, run after waiting
--   for a close, must read closed_periods as committed after that close;
--   at REPEATABLE READ or SERIALIZABLE it would read the transaction's
--   first snapshot. transaction_isolation cannot be changed once a
--   transaction has run a query, so it cannot be faked here.
-- * The close lock, taken shared: month_close_lock in ROW EXCLUSIVE mode,
--   which ledger_close_waits_for_postings takes in EXCLUSIVE mode, so a
--   close waits for the sets in flight and new sets wait for the close.
--   A table of its own (sql/0012), because locking it needs INSERT on it,
--   which only the owner and the service role have: not posting_sets
--   (sql/0001), whose lock needs rights the service role does not have,
--   nor an advisory lock (sql/0007), which any role could take and hold.
--   razao's own posting transaction has taken it already, before it dated
--   its sets (ledger_last_closed_month); here it is taken again for any
--   other writer, at no cost to razao's.
-- * Once per statement, not per row (sql/0034): a worker writes a batch
--   of sets in one statement; the month check and created_xid's run at
--   the statement's end (ledger_check_new_sets).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_refuse_closed_month()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'posting sets are written at READ COMMITTED, not %', upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    LOCK TABLE month_close_lock IN ROW EXCLUSIVE MODE;
    RETURN NULL;
END;
$function$;
