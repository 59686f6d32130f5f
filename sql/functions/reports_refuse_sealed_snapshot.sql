-- A month's snapshot, once committed, is sealed, as a posting set is
-- (sql/0003): its lines join only a snapshot written by the same
-- transaction. trg_trial_balance_snapshots_sealed (AFTER INSERT on
-- trial_balance_snapshots, REFERENCING NEW TABLE AS new_lines, FOR EACH
-- STATEMENT, enabled ALWAYS). The snapshot's created_xid is its writer's
-- own (ledger_stamp_created_xid).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION reports_refuse_sealed_snapshot()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
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
$function$;
