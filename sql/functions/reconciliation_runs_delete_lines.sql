-- Deleting a reconciliation run deletes its lines, as a foreign key's
-- ON DELETE CASCADE would (sql/0029, with reconciliation_lines_check_runs):
-- trg_reconciliation_runs_delete_lines (AFTER DELETE, REFERENCING OLD
-- TABLE AS old_runs, FOR EACH STATEMENT).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION reconciliation_runs_delete_lines()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    DELETE FROM reconciliation_lines l USING old_runs o WHERE l.run_id = o.id;
    RETURN NULL;
END
$function$;
