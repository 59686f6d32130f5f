-- 0012: the ledger's triggers trust nothing a client session can set.
--
-- Until now a session could steer them four ways:
--   * names: the functions named postings, posting_sets and closed_periods
--     without a schema, under the caller's search_path, so a temporary
--     table of the same name (pg_temp is searched first) answered instead;
--   * a flag: the sealed-set check read razao.balance_checked, a custom
--     setting any client can clear with set_config;
--   * the isolation level: under SERIALIZABLE the closed-month check read
--     closed_periods from a snapshot older than a close it had waited for;
--   * locks: the close lock and the refund serialisation were advisory
--     locks, which any role that can connect may take, and hold, to freeze
--     every ledger write.
-- Each function below is redefined without those holes, and at the end
-- every ledger function gets a fixed search_path with pg_temp last.

-- And three more a review found:
--   * operators: a comparison of a numeric sum with an integer literal
--     has no exact match in pg_catalog, so an operator of exactly those
--     types in a schema on the search path would win over pg_catalog's,
--     which needs a cast; every comparison below is between one type;
--   * closes: closed_periods takes only the month after the last closed
--     one (or the first close), and not a month that has not ended
--     anywhere on Earth yet (razao checks the configured zone first);
--   * xids: verify judges commit order by posting_sets.created_xid,
--     closed_periods.closed_xid and month_snapshots.created_xid, and a
--     sealed snapshot by its created_xid; each is now the inserting
--     transaction's own, whatever the INSERT says.

-- The close lock. A table, so taking it needs rights on it: every posting
-- set insert takes it in ROW EXCLUSIVE mode (needs INSERT), a close in
-- EXCLUSIVE mode (needs UPDATE); only the owner and the service role
-- (docs/razao-role.sql) have those. The modes behave as the advisory
-- lock's shared and exclusive did: postings in flight do not wait for one
-- another, a close waits for all of them, and new ones wait for the close.
-- The table never holds a row.
CREATE TABLE month_close_lock ();
CREATE TRIGGER trg_month_close_lock_no_rows BEFORE INSERT OR UPDATE OR DELETE ON month_close_lock
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_month_close_lock_no_truncate BEFORE TRUNCATE ON month_close_lock
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE month_close_lock ENABLE ALWAYS TRIGGER trg_month_close_lock_no_rows;
ALTER TABLE month_close_lock ENABLE ALWAYS TRIGGER trg_month_close_lock_no_truncate;

-- Posting sets are written at READ COMMITTED, the one level at which each
-- statement of a trigger sees what committed before it: at REPEATABLE
-- READ or SERIALIZABLE the closed-month check, run after waiting for a
-- close, would read closed_periods from the transaction's first snapshot,
-- from before that close. transaction_isolation cannot be changed once a
-- transaction has run a query, so it cannot be faked here.
CREATE OR REPLACE FUNCTION ledger_refuse_closed_month() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'posting sets are written at READ COMMITTED, not %', upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    LOCK TABLE month_close_lock IN ROW EXCLUSIVE MODE;
    -- Generated columns are not computed yet in a BEFORE trigger.
    IF EXISTS (SELECT 1 FROM closed_periods WHERE month = date_trunc('month', NEW.competence::timestamp)::date) THEN
        RAISE EXCEPTION 'competence month % is closed', to_char(NEW.competence, 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    NEW.created_xid := pg_current_xact_id();
    RETURN NEW;
END;
$$;

-- A close, however it is written (razao's close or a hand-typed INSERT),
-- waits for the posting sets in flight and reads the ledger as committed.
CREATE FUNCTION ledger_close_waits_for_postings() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    last_closed date;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'months are closed at READ COMMITTED, not %', upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_closed_periods_close_lock';
    END IF;
    LOCK TABLE month_close_lock IN EXCLUSIVE MODE;
    -- Read after the lock: every close before this one has committed.
    SELECT max(month) INTO last_closed FROM closed_periods;
    IF last_closed IS NOT NULL AND NEW.month <> (last_closed + interval '1 month')::date THEN
        RAISE EXCEPTION 'month % cannot be closed: the next month to close is %', to_char(NEW.month, 'YYYY-MM'),
            to_char(last_closed + interval '1 month', 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_closed_periods_close_lock';
    END IF;
    -- UTC+14 is the first zone where a month ends.
    IF now() < ((NEW.month + interval '1 month')::timestamp AT TIME ZONE 'Etc/GMT-14') THEN
        RAISE EXCEPTION 'month % has not ended yet', to_char(NEW.month, 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_closed_periods_close_lock';
    END IF;
    NEW.closed_xid := pg_current_xact_id();
    NEW.closed_at := now();
    RETURN NEW;
END;
$$;
CREATE TRIGGER trg_closed_periods_close_lock BEFORE INSERT ON closed_periods
    FOR EACH ROW EXECUTE FUNCTION ledger_close_waits_for_postings();
ALTER TABLE closed_periods ENABLE ALWAYS TRIGGER trg_closed_periods_close_lock;

-- A set's postings are all written by one statement: the one after which
-- this trigger finds every posting of the set among the statement's new
-- rows. A later statement adding legs to a set, committed or not, is
-- refused. The balance check that runs at COMMIT (or earlier, under SET
-- CONSTRAINTS ... IMMEDIATE) therefore sees every leg the set will ever
-- have, with no flag to remember that it ran.
CREATE OR REPLACE FUNCTION ledger_refuse_sealed_set() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    set_id  bigint;
    added   bigint;
    set_xid xid8;
    legs    bigint;
BEGIN
    FOR set_id, added IN SELECT posting_set_id, count(*) FROM new_postings GROUP BY posting_set_id LOOP
        SELECT created_xid INTO set_xid FROM posting_sets WHERE id = set_id;
        SELECT count(*) INTO legs FROM postings WHERE posting_set_id = set_id;
        IF set_xid IS NULL OR set_xid <> pg_current_xact_id() OR legs <> added THEN
            RAISE EXCEPTION 'posting set % is sealed: its postings are written by the statement that writes its first, in the transaction that created it', set_id
                USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_postings_sealed_set';
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;

-- Invariant 2, at COMMIT: at least two postings, zero per currency, and
-- the set's amount is the sum of its debits in its currency (so the refund
-- cap below compares money the postings move). No session state.
CREATE OR REPLACE FUNCTION ledger_check_posting_set() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    legs         bigint;
    debits       numeric;
    total        numeric;
    currencies   bigint;
    unbalanced   text;
BEGIN
    SELECT count(*), coalesce(sum(amount::numeric) FILTER (WHERE amount > 0::bigint AND currency = NEW.currency), 0::numeric),
           coalesce(sum(amount::numeric), 0::numeric), count(DISTINCT currency)
        INTO legs, debits, total, currencies FROM postings WHERE posting_set_id = NEW.id;
    IF legs < 2::bigint THEN
        RAISE EXCEPTION 'posting set % has % posting(s); at least 2 are required', NEW.id, legs
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
    END IF;
    IF currencies > 1::bigint OR total <> 0::numeric THEN
        SELECT string_agg(currency::text || ' ' || s::text, ', ') INTO unbalanced FROM (
            SELECT currency, sum(amount::numeric) AS s FROM postings
            WHERE posting_set_id = NEW.id GROUP BY currency HAVING sum(amount::numeric) <> 0::numeric
        ) u;
        IF unbalanced IS NOT NULL THEN
            RAISE EXCEPTION 'posting set % does not balance: %', NEW.id, unbalanced
                USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
        END IF;
    END IF;
    IF debits <> NEW.amount::numeric THEN
        RAISE EXCEPTION 'posting set % states amount % but debits %', NEW.id, NEW.amount, debits
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
    END IF;
    RETURN NULL;
END;
$$;

-- Invariant 3, at COMMIT: refunds never exceed their sale. Concurrent
-- refunds of one charge are serialised by a row lock on the charge's sale
-- set. Locking a row needs UPDATE rights, which the service role has on
-- no ledger table, so the function runs as its owner (SECURITY DEFINER,
-- with the fixed search_path set below), and no other role can take that
-- lock at all. NO KEY UPDATE does not conflict with the KEY SHARE lock a
-- posting's foreign key takes.
CREATE FUNCTION ledger_check_refunds_within_sale() RETURNS trigger
LANGUAGE plpgsql SECURITY DEFINER AS $$
DECLARE
    sale_amount  numeric;
    refunded     numeric;
BEGIN
    SELECT amount::numeric INTO sale_amount FROM posting_sets
        WHERE kind = 'sale' AND charge_id = NEW.charge_id FOR NO KEY UPDATE;
    -- A new statement, so a new snapshot: it sees the refunds committed by
    -- whoever held the lock before us.
    SELECT coalesce(sum(amount::numeric), 0::numeric) INTO refunded FROM posting_sets
        WHERE kind = 'refund' AND charge_id = NEW.charge_id;
    IF sale_amount IS NULL OR refunded > sale_amount THEN
        RAISE EXCEPTION 'refunds of charge % total % above its sale %', NEW.charge_id, refunded, coalesce(sale_amount, 0::numeric)
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_refunds_within_sale';
    END IF;
    RETURN NULL;
END;
$$;
REVOKE ALL ON FUNCTION ledger_check_refunds_within_sale() FROM PUBLIC;
CREATE CONSTRAINT TRIGGER trg_refunds_within_sale AFTER INSERT ON posting_sets
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.kind = 'refund') EXECUTE FUNCTION ledger_check_refunds_within_sale();
ALTER TABLE posting_sets ENABLE ALWAYS TRIGGER trg_refunds_within_sale;

-- Payouts to one partner are serialised by a row lock on the partner's
-- payable account, through this function for the same reason: the
-- service role has no UPDATE right on accounts, and no other role may
-- call it (docs/razao-role.sql grants EXECUTE to the service role).
CREATE FUNCTION ledger_lock_account(account_code text) RETURNS bigint
LANGUAGE sql SECURITY DEFINER AS $$
    SELECT id FROM accounts WHERE code = account_code FOR NO KEY UPDATE
$$;
REVOKE ALL ON FUNCTION ledger_lock_account(text) FROM PUBLIC;

-- A month's snapshot carries its closing transaction's xid.
CREATE FUNCTION ledger_stamp_created_xid() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.created_xid := pg_current_xact_id();
    RETURN NEW;
END;
$$;
CREATE TRIGGER trg_month_snapshots_created_xid BEFORE INSERT ON month_snapshots
    FOR EACH ROW EXECUTE FUNCTION ledger_stamp_created_xid();
ALTER TABLE month_snapshots ENABLE ALWAYS TRIGGER trg_month_snapshots_created_xid;

-- Every ledger function resolves names in this schema, never in pg_temp
-- (listed last, it can no longer shadow a table) nor in a schema a caller
-- puts first. Set by name with the migrating session's schema, so the
-- ledger can live in a schema other than public.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'ledger_refuse_change()', 'ledger_refuse_closed_month()', 'ledger_close_waits_for_postings()',
        'ledger_refuse_sealed_set()', 'ledger_check_posting_set()', 'ledger_check_refunds_within_sale()',
        'ledger_lock_account(text)', 'ledger_stamp_created_xid()', 'reports_refuse_sealed_snapshot()', 'api_tokens_revoke_only()'
    ] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;
