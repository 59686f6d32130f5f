-- A month's snapshot carries its closing transaction's xid, whatever the
-- INSERT says (sql/0012): trg_month_snapshots_created_xid (BEFORE INSERT
-- on month_snapshots, each row, enabled ALWAYS). verify judges commit
-- order by it, and a snapshot's lines join only a snapshot of their own
-- transaction (reports_refuse_sealed_snapshot).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_stamp_created_xid()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    NEW.created_xid := pg_current_xact_id();
    RETURN NEW;
END;
$function$;
