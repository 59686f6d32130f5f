-- A statement's reconciliation lines name an existing run, checked once
-- per statement instead of by a foreign key, whose trigger would look the
-- run up once per line, a large part of writing a big statement (sql/0029;
-- docs/performance.md, "Reconciliation load"):
-- trg_reconciliation_lines_check_runs (AFTER INSERT, REFERENCING NEW
-- TABLE AS new_lines, FOR EACH STATEMENT). It does what a foreign key does,
-- set-based: it locks the runs the new lines name as the key does (FOR KEY
-- SHARE: no run is deleted under lines being written) and refuses lines
-- of a run that does not exist. A line's run never changes
-- (reconciliation_lines_keep_run); deleting a run deletes its lines
-- (reconciliation_runs_delete_lines). Not a ledger guard: enabled as a
-- foreign key's trigger is, for origin sessions.
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION reconciliation_lines_check_runs()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    PERFORM 1 FROM reconciliation_runs r WHERE r.id IN (SELECT DISTINCT n.run_id FROM new_lines n) FOR KEY SHARE OF r;
    IF EXISTS (SELECT 1 FROM new_lines n WHERE NOT EXISTS (SELECT 1 FROM reconciliation_runs r WHERE r.id = n.run_id)) THEN
        RAISE EXCEPTION 'reconciliation lines of a run that does not exist'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'reconciliation_lines', CONSTRAINT = 'reconciliation_lines_run_id_check';
    END IF;
    RETURN NULL;
END
$function$;
