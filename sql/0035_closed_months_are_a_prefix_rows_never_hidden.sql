-- 0035: every month up to the last closed one is closed, and no
-- row-level security policy can hide a row from the ledger's checks.
--
-- Closed months. A close takes only the month after the last closed one,
-- but the first close may be of any month that has ended (razao's own
-- close starts at the ledger's first month from go-live on; a hand-typed
-- INSERT starts wherever it likes). The sets' trigger refused only the
-- closed months themselves, so a month before the first close stayed open
-- for ever: a set dated 2026-09 (or 1900-01), written after 2026-10 was
-- closed, changed the opening balances of 2026-10, a closed month, and
-- every month after it. A new set's competence month must now be after
-- the last closed month, which is what razao books a late event into
-- already (postings.insertSetsSQL); a month before the first close that
-- was never closed keeps the sets it had, and can get no more.
--
-- Row-level security. The trigger functions run as the role that writes
-- (SECURITY INVOKER), and a query of theirs sees what that role may see:
-- the owner could enable row-level security on postings with a policy
-- that hides one leg from the writer, and the balance check at COMMIT
-- summed the legs it was shown (a set of +100/-100/+13 passed as
-- balanced). Every ledger function now runs with row_security = off, so
-- a query of theirs that a policy would filter fails instead: the write is
-- refused, whatever the policy says. (razao verify runs the same way, and
-- names any table of the ledger's schema with row-level security on.)
--
-- Every comparison below is between one type (see 0012 on operators).

CREATE OR REPLACE FUNCTION ledger_check_new_sets() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    last_closed date;
    refused     date;
BEGIN
    SELECT max(c.month) INTO last_closed FROM closed_periods c;
    SELECT min(n.competence_month) INTO refused FROM new_sets n WHERE n.competence_month <= last_closed;
    IF refused IS NOT NULL THEN
        RAISE EXCEPTION 'competence month % is closed: every month up to %, the last closed, is', to_char(refused::timestamp, 'YYYY-MM'),
            to_char(last_closed::timestamp, 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    IF EXISTS (SELECT 1 FROM new_sets n WHERE n.created_xid <> pg_current_xact_id()) THEN
        RAISE EXCEPTION 'a posting set''s created_xid is the transaction that writes it'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_written_open';
    END IF;
    RETURN NULL;
END;
$$;

-- CREATE OR REPLACE drops a function's settings: pin them again (see 0012),
-- and give every ledger function (the migrations' own, each with a pinned
-- search_path; never a function of the schema that razao did not create)
-- its row_security. A later migration that replaces a ledger function
-- pins both again.
DO $$
DECLARE
    f text;
BEGIN
    EXECUTE format('ALTER FUNCTION ledger_check_new_sets() SET search_path = pg_catalog, %I, pg_temp', current_schema());
    FOR f IN SELECT p.oid::regprocedure::text FROM pg_proc p
        WHERE p.pronamespace = (SELECT n.oid FROM pg_namespace n WHERE n.nspname = current_schema())
          AND p.proname = ANY (ARRAY['api_tokens_revoke_only', 'ledger_check_new_sets', 'ledger_check_posting_set',
              'ledger_check_refunds_within_sale', 'ledger_close_waits_for_postings', 'ledger_lock_account',
              'ledger_refuse_change', 'ledger_refuse_closed_month', 'ledger_refuse_sealed_set', 'ledger_stamp_created_xid',
              'outbox_notify', 'reconciliation_analyze_lines', 'reconciliation_lines_check_runs',
              'reconciliation_lines_keep_run', 'reconciliation_runs_delete_lines', 'reports_refuse_sealed_snapshot'])
          AND EXISTS (SELECT 1 FROM unnest(p.proconfig) c WHERE c LIKE 'search_path=%')
    LOOP
        EXECUTE format('ALTER FUNCTION %s SET row_security = off', f);
    END LOOP;
END
$$;
