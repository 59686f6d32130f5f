-- The database role razao's service runs as: it may read and append to the
-- ledger but has no right to UPDATE, DELETE or TRUNCATE it at all; the
-- append-only triggers stay as the second barrier. Migrations run as the
-- owner (the role that created the tables), never as this one.
--
-- Run as the owner, after `razao migrate`, in the service's database:
--   psql "$OWNER_DATABASE_URL" -v ON_ERROR_STOP=1 -f docs/razao-role.sql
-- then give the role a password and serve with -migrate=false:
--   ALTER ROLE razao PASSWORD '...';
--   DATABASE_URL=postgres://razao:...@host/db razao serve -migrate=false
-- Re-run it after a migration that adds tables.

DO $$
BEGIN
    CREATE ROLE razao LOGIN;
EXCEPTION WHEN duplicate_object THEN
    NULL; -- already there
END
$$;

GRANT USAGE ON SCHEMA public TO razao;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM razao;
GRANT SELECT ON schema_migrations TO razao;

-- The ledger: read and append, nothing else.
GRANT SELECT, INSERT ON accounts, posting_sets, postings, closed_periods,
    month_snapshots, trial_balance_snapshots, outbox TO razao;

-- Working tables the service updates (delivery status, charge state,
-- divergence resolution, export runs, token revocation).
GRANT SELECT, INSERT, UPDATE ON charges, inbox, divergences, export_runs TO razao;
GRANT SELECT, INSERT ON access_grants TO razao;
GRANT SELECT, INSERT ON api_tokens TO razao;
GRANT UPDATE (revoked_at) ON api_tokens TO razao;

GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO razao;
