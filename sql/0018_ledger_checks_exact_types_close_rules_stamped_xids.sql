-- 0018: what a review of 0012 found still open in the ledger's triggers.
--
-- * Operators. A comparison of a numeric sum with an integer literal
--   (total <> 0) has no exact match in pg_catalog, so an operator of
--   exactly those types in a schema on the search_path is chosen over
--   pg_catalog's, which needs a cast: such an operator could make every
--   set look balanced. Every comparison below is between two values of
--   one type, which pg_catalog matches exactly and, being first on the
--   path, wins.
-- * Closes. closed_periods took any first-of-month: a month years ahead,
--   or one after a gap, which no one can ever close behind it (a month is
--   never reopened). A close is now the month after the last closed one
--   (or the first close), and not a month that has not ended anywhere on
--   Earth yet (the configured zone's end is razao's own, stricter check).
-- * Xids. verify judges commit order by posting_sets.created_xid,
--   closed_periods.closed_xid and month_snapshots.created_xid, and a
--   sealed snapshot by its created_xid: columns an INSERT could set to
--   anything. Each is now the inserting transaction's own xid, whatever
--   the INSERT says.

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

CREATE OR REPLACE FUNCTION ledger_close_waits_for_postings() RETURNS trigger
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

CREATE OR REPLACE FUNCTION ledger_check_refunds_within_sale() RETURNS trigger
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

-- CREATE OR REPLACE drops a function's settings: pin them again.
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY[
        'ledger_refuse_closed_month()', 'ledger_close_waits_for_postings()', 'ledger_check_posting_set()',
        'ledger_check_refunds_within_sale()', 'ledger_refuse_sealed_set()', 'ledger_stamp_created_xid()'
    ] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;
