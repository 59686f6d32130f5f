-- Matching refreshes reconciliation_lines' statistics through this
-- function, as the owner (sql/0033). ANALYZE is the table owner's alone
-- (until PostgreSQL 17's MAINTAIN), and anyone else's ANALYZE is skipped
-- with a WARNING, not refused: run as the service role, matching would
-- never refresh them, and a run's freshly copied lines would be planned as
-- a handful (nested loops over every line of a big statement). sql/0033
-- revoked EXECUTE from PUBLIC; docs/razao-role.sql grants it to the
-- service role.
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION reconciliation_analyze_lines()
 RETURNS void
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    ANALYZE reconciliation_lines;
END
$function$;
