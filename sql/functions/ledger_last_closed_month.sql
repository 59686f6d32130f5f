-- The posting transaction's one read of the months: it takes the close
-- lock in the mode every posting-set INSERT takes it (ROW EXCLUSIVE, as
-- ledger_refuse_closed_month does at the INSERT) and then returns the last
-- closed month, NULL when none is. From here to the commit no close can
-- commit, so every month the transaction books follows from this one value
-- (Go: periods.LockForPosting, then periods.Competence and periods.Closed),
-- and the barrier (ledger_check_new_sets) never has to refuse a set razao
-- dated. One round trip: a LOCK and a SELECT sent apart would be two.
--
-- * SECURITY INVOKER: the lock needs the caller's own right on
--   month_close_lock (INSERT, which only the owner and the service role
--   have). As definer it would let any role that may call it hold every
--   close back.
-- * The read follows the lock, in its own statement: at READ COMMITTED it
--   sees every close committed before the lock was granted. (The INSERT's
--   own trigger refuses any other isolation.)
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_last_closed_month()
 RETURNS date
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    last_closed date;
BEGIN
    LOCK TABLE month_close_lock IN ROW EXCLUSIVE MODE;
    -- Read after the lock: every close before it has committed.
    SELECT max(month) INTO last_closed FROM closed_periods;
    RETURN last_closed;
END;
$function$;
