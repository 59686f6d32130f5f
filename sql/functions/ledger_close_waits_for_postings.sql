-- A close, however it is written (razao's periods.Close or a hand-typed
-- INSERT), waits for the posting sets in flight and reads the ledger as
-- committed: trg_closed_periods_close_lock (BEFORE INSERT on
-- closed_periods, each row, enabled ALWAYS), since sql/0012.
--
-- * The close lock is the table month_close_lock, taken here in EXCLUSIVE
--   mode (needs UPDATE on it) while every posting-set INSERT takes it in
--   ROW EXCLUSIVE mode (ledger_refuse_closed_month; needs INSERT): postings
--   in flight do not wait for one another, a close waits for all of them,
--   and new ones wait for the close. Only the owner and the service role
--   have those rights. An advisory lock (sql/0007's) would let any role
--   that can connect take and hold it to freeze every write.
-- * READ COMMITTED only: at REPEATABLE READ or SERIALIZABLE the check,
--   run after waiting for the lock, would read closed_periods from the
--   transaction's first snapshot, from before the closes it waited for.
--   transaction_isolation cannot be changed once a transaction has run a
--   query, so it cannot be faked here.
-- * Months close in order: only the month after the last closed one (any
--   month for the first close). That is the barrier, whoever writes. The
--   rest of the month-close rule (once ended in the ledger's zone, never
--   before go-live, the first close at the first month with activity) is
--   periods.CheckCloseTime and CheckCloseOrder, pure functions of values
--   and razao's one clock: a check here would be a second idea of "ended"
--   with a clock of its own. `razao verify` names a closed month that has
--   not ended.
-- * closed_xid and closed_at are the closing transaction's own, whatever
--   the INSERT says: verify judges commit order by closed_xid (sql/0011
--   added the column, sql/0012 stamps it).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_close_waits_for_postings()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    last_closed date;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'months are closed at READ COMMITTED, not %', upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_closed_periods_close_lock';
    END IF;
    LOCK TABLE month_close_lock IN EXCLUSIVE MODE;
    -- Read after the lock: every close before this one has committed.
    SELECT max(month) INTO last_closed FROM closed_periods;
    IF last_closed IS NOT NULL AND NEW.month <> (last_closed + interval '1 month')::date THEN
        RAISE EXCEPTION 'month % cannot be closed: the next month to close is %', to_char(NEW.month, 'YYYY-MM'),
            to_char(last_closed + interval '1 month', 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_closed_periods_close_lock';
    END IF;
    NEW.closed_xid := pg_current_xact_id();
    NEW.closed_at := now();
    RETURN NEW;
END;
$function$;
