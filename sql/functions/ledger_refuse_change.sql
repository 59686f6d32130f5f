-- Invariant 1: the ledger's tables are append-only, whoever connects;
-- corrections are new sets (sql/0001). Every trigger that calls it refuses
-- outright, enabled ALWAYS, so it fires under session_replication_role =
-- replica too: "whoever connects" includes a session that tries to sneak
-- past it that way.
--
--   BEFORE UPDATE OR DELETE, each row: posting_sets, postings, accounts,
--     closed_periods (sql/0001), month_snapshots, trial_balance_snapshots
--     (sql/0003). Accounts are never renamed, retyped or removed:
--     postings and caches rely on an account meaning the same thing for
--     ever.
--   BEFORE TRUNCATE: the same tables (accounts' since sql/0034: not only
--     the foreign keys that point at it refuse it).
--   BEFORE INSERT OR UPDATE OR DELETE and TRUNCATE on month_close_lock
--     (sql/0012), the close lock, which never holds a row.
--
-- The error names the trigger as its constraint: razao maps refusals by
-- constraint name.
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_refuse_change()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    RAISE EXCEPTION 'ledger table % is append-only: % refused', TG_TABLE_NAME, TG_OP
        USING ERRCODE = 'restrict_violation', CONSTRAINT = TG_NAME;
END;
$function$;
