-- A reconciliation line stays in its run (sql/0029, with
-- reconciliation_lines_check_runs, in place of a foreign key):
-- trg_reconciliation_lines_keep_run (BEFORE UPDATE OF run_id, each row),
-- which fires only for an UPDATE that sets run_id, which razao never does.
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION reconciliation_lines_keep_run()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    IF NEW.run_id IS DISTINCT FROM OLD.run_id THEN
        RAISE EXCEPTION 'a reconciliation line stays in its run'
            USING ERRCODE = 'foreign_key_violation', TABLE = 'reconciliation_lines', CONSTRAINT = 'reconciliation_lines_run_id_check';
    END IF;
    RETURN NEW;
END
$function$;
