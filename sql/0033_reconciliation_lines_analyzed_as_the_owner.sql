-- ANALYZE is the table owner's alone (PostgreSQL 15; MAINTAIN comes in 17),
-- and anyone else's ANALYZE is skipped with a WARNING, not refused: run as
-- the service role, matching never refreshed reconciliation_lines'
-- statistics, and a run's freshly copied lines were planned as a handful
-- (nested loops over a million lines). Matching refreshes them through
-- this function, as the owner; only the service role may call it
-- (docs/razao-role.sql).
CREATE FUNCTION reconciliation_analyze_lines() RETURNS void
LANGUAGE plpgsql SECURITY DEFINER AS $$
BEGIN
    ANALYZE reconciliation_lines;
END
$$;
REVOKE ALL ON FUNCTION reconciliation_analyze_lines() FROM PUBLIC;

-- Names resolved in the ledger's schema, pg_temp last (see 0012).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION reconciliation_analyze_lines() SET search_path = pg_catalog, %I, pg_temp', current_schema());
END
$$;
