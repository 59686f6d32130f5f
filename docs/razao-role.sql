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

-- An owner without CREATEROLE can re-run this once the role exists: CREATE
-- ROLE is only tried when it does not.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = 'razao') THEN
        CREATE ROLE razao LOGIN;
    END IF;
EXCEPTION WHEN duplicate_object THEN
    NULL; -- created meanwhile
END
$$;

-- Nobody else gets in, and nobody, the service included, may create
-- objects that could stand in for ours: the ledger's functions resolve
-- names with a fixed search_path (sql/0012), and without TEMP or CREATE
-- there is no temporary table or function named like ours to begin with.
-- An idle transaction is ended after a minute, whoever holds it: a
-- forgotten psql session must not hold locks, or the outbox horizon, for
-- hours. (Any role may lift that for itself; what it can hold up without
-- rights on our tables is nothing, see sql/0012 and events/events.go.)
DO $$
BEGIN
    EXECUTE format('REVOKE CONNECT, TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
    EXECUTE format('GRANT CONNECT ON DATABASE %I TO %I', current_database(), 'razao');
    -- The service alone may create temporary tables: a statement file is
    -- staged in one (reconcile/loadfile.go). It names ours only with their
    -- schema, and every ledger function resolves names with pg_temp last
    -- (sql/0012), so a temporary table named like ours answers for
    -- nothing (TestTempTablesNamedLikeOursAnswerForNothing).
    EXECUTE format('GRANT TEMPORARY ON DATABASE %I TO %I', current_database(), 'razao');
    EXECUTE format('ALTER DATABASE %I SET idle_in_transaction_session_timeout = %L', current_database(), '60s');
END
$$;
-- Not even USAGE: PostgreSQL locks the tables a statement names while it
-- parses it, before it checks any right on them, so a role that could
-- look up our tables could PREPARE a statement on month_close_lock and
-- hold that lock to its transaction's end, stalling every close (and the
-- postings queued behind it). A role that may not use the schema cannot
-- even name them. Grant USAGE to a reporting role explicitly.
REVOKE CREATE, USAGE ON SCHEMA public FROM PUBLIC;
-- The service's own sessions end an idle transaction too, and read with
-- row_security off: a row-level security policy on a ledger table (none
-- of ours has one) then makes the service fail rather than decide a
-- payout on rows a policy hid. ALTER ROLE needs CREATEROLE: tried only
-- while a setting is missing, so an owner without it can re-run this.
DO $$
BEGIN
    IF NOT EXISTS (SELECT 1 FROM pg_db_role_setting s JOIN pg_roles r ON r.oid = s.setrole
                   WHERE r.rolname = 'razao' AND s.setdatabase = 0
                     AND s.setconfig @> ARRAY['idle_in_transaction_session_timeout=60s', 'row_security=off']) THEN
        ALTER ROLE razao SET idle_in_transaction_session_timeout = '60s';
        ALTER ROLE razao SET row_security = off;
    END IF;
END
$$;

GRANT USAGE ON SCHEMA public TO razao;
REVOKE ALL ON ALL TABLES IN SCHEMA public FROM razao;
GRANT SELECT ON schema_migrations TO razao;

-- The ledger: read and append, nothing else.
GRANT SELECT, INSERT ON accounts, posting_sets, postings, closed_periods,
    month_snapshots, trial_balance_snapshots, outbox TO razao;
-- Every posting set's unique business keys (sql/0054), written with it.
-- The partitions of posting_sets and postings (sql/0056) are read and
-- written through their parents: no grant on them.
GRANT SELECT, INSERT ON posting_set_keys TO razao;

-- Working tables the service updates (delivery status, charge state,
-- divergence resolution, export runs, token revocation).
GRANT SELECT, INSERT, UPDATE ON charges, inbox, divergences, export_runs TO razao;
GRANT SELECT, INSERT ON access_grants TO razao;
-- A callback of several events keeps its body once (sql/0013); a refund
-- under another id than its statement line's is paired with it once
-- (sql/0029).
GRANT SELECT, INSERT ON inbox_bodies, refund_aliases TO razao;
-- Reconciliation (sql/0023): runs claimed, renewed and finished; the
-- pages of a bcb-pix window kept as fetched, a statement file as uploaded
-- (sql/0032); a run's lines written,
-- decided in place (UPDATE), kept once per key and their phantoms
-- recomputed (DELETE). None of these is the ledger.
GRANT SELECT, INSERT, UPDATE ON reconciliation_runs TO razao;
GRANT SELECT, INSERT ON reconciliation_pages, reconciliation_files TO razao;
GRANT SELECT, INSERT, UPDATE, DELETE ON reconciliation_lines TO razao;
GRANT SELECT, INSERT ON api_tokens TO razao;
GRANT UPDATE (revoked_at) ON api_tokens TO razao;
-- Month sums (sql/0021): read by every report, refreshed off the hot path
-- only through month_sums_refresh (sql/0041), which computes them from the
-- postings as the owner: the service may not write them itself, or it
-- could forge what every report of an open month reads.
GRANT SELECT ON month_sums, month_sum_lines TO razao;
-- Console sessions (sql/0026): created at sign-in, deleted at sign-out or
-- once expired.
GRANT SELECT, INSERT, DELETE ON console_sessions TO razao;
-- Correction proposals (sql/0046): proposed, then decided once.
GRANT SELECT, INSERT, UPDATE ON adjustments TO razao;
-- Webhooks razao sends (sql/0051): endpoints created, changed and
-- deleted; replays queued and done; attempts logged and purged.
GRANT SELECT, INSERT, UPDATE, DELETE ON webhook_endpoints, webhook_replays, webhook_attempts TO razao;
-- Retention (sql/0052, package archive): archive files recorded; once
-- archived, events, shared bodies, statement pages and kept files
-- deleted (an inbox row only loses its body, by UPDATE). Never a table of
-- the ledger.
GRANT SELECT, INSERT ON archives TO razao;
GRANT DELETE ON outbox, inbox_bodies, reconciliation_pages, reconciliation_files TO razao;
-- How far the outbox was purged (sql/0058): read by every event stream
-- and replay; moved only by the trigger of a DELETE on the outbox, as the
-- owner, never written by the service.
GRANT SELECT ON outbox_purged_through TO razao;
-- razao verify's runs and closed months' seals (sql/0057), recorded when
-- it runs as the service: written once, never changed nor deleted (a seal
-- missing is itself reported).
GRANT SELECT, INSERT ON verify_runs, verify_month_seals TO razao;

GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO razao;

-- The close lock (sql/0012): INSERT lets a posting set take it shared
-- (ROW EXCLUSIVE), UPDATE lets a close take it exclusively. The table
-- refuses every row, so these rights write nothing.
GRANT INSERT, UPDATE ON month_close_lock TO razao;
-- Payouts to a partner are serialised by a row lock this function takes
-- as the owner; nobody else may call it.
GRANT EXECUTE ON FUNCTION ledger_lock_account(text) TO razao;
-- Matching refreshes its lines' statistics as the owner (sql/0033).
GRANT EXECUTE ON FUNCTION reconciliation_analyze_lines() TO razao;
-- The month sums are refreshed as the owner (sql/0041).
GRANT EXECUTE ON FUNCTION month_sums_refresh(date) TO razao;
-- A close first makes the partitions of the months ahead (sql/0056), as
-- the owner: the service role creates no table itself.
GRANT EXECUTE ON FUNCTION ledger_ensure_month_partitions(date) TO razao;
