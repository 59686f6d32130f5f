-- 0009: five changes to the database's last barrier and its tables, each
-- numbered below (one file because they landed together; the version is
-- what schema_migrations records, so it stays one).

-- 1. A posting set's amount is the sum of its debits in its currency, so
--    "refunds within the sale", which compares set amounts, compares money
--    that the postings actually move.
-- 2. Once balance checks have run in a transaction (at COMMIT, or earlier
--    under SET CONSTRAINTS ALL IMMEDIATE), no posting may be added in it:
--    the check raises a transaction-local flag the sealed-set trigger
--    reads, so no leg can join a set after its check.
CREATE OR REPLACE FUNCTION ledger_check_posting_set() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    legs         int;
    debits       bigint;
    total        bigint;
    currencies   int;
    unbalanced   text;
    sale_amount  bigint;
    refunded     bigint;
BEGIN
    -- One transaction-local flag (a setting per set would cost a new
    -- setting each time): from now on, postings are refused.
    IF current_setting('razao.balance_checked', true) IS DISTINCT FROM 'yes' THEN
        PERFORM set_config('razao.balance_checked', 'yes', true);
    END IF;
    SELECT count(*), coalesce(sum(amount) FILTER (WHERE amount > 0 AND currency = NEW.currency), 0),
           coalesce(sum(amount), 0), count(DISTINCT currency)
        INTO legs, debits, total, currencies FROM postings WHERE posting_set_id = NEW.id;
    IF legs < 2 THEN
        RAISE EXCEPTION 'posting set % has % posting(s); at least 2 are required', NEW.id, legs
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
    END IF;
    IF currencies > 1 OR total <> 0 THEN
        SELECT string_agg(currency || ' ' || s, ', ') INTO unbalanced FROM (
            SELECT currency, sum(amount) AS s FROM postings
            WHERE posting_set_id = NEW.id GROUP BY currency HAVING sum(amount) <> 0
        ) u;
        IF unbalanced IS NOT NULL THEN
            RAISE EXCEPTION 'posting set % does not balance: %', NEW.id, unbalanced
                USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
        END IF;
    END IF;
    IF debits <> NEW.amount THEN
        RAISE EXCEPTION 'posting set % states amount % but debits %', NEW.id, NEW.amount, debits
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
    END IF;
    IF NEW.kind = 'refund' THEN
        PERFORM pg_advisory_xact_lock(hashtextextended('razao-refund:' || NEW.charge_id, 0));
        SELECT amount INTO sale_amount FROM posting_sets WHERE kind = 'sale' AND charge_id = NEW.charge_id;
        SELECT coalesce(sum(amount), 0) INTO refunded FROM posting_sets WHERE kind = 'refund' AND charge_id = NEW.charge_id;
        IF sale_amount IS NULL OR refunded > sale_amount THEN
            RAISE EXCEPTION 'refunds of charge % total % above its sale %', NEW.charge_id, refunded, coalesce(sale_amount, 0)
                USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_refunds_within_sale';
        END IF;
    END IF;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION ledger_refuse_sealed_set() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (
        SELECT 1 FROM new_postings n JOIN posting_sets s ON s.id = n.posting_set_id
        WHERE s.created_xid <> pg_current_xact_id()
    ) OR current_setting('razao.balance_checked', true) = 'yes' THEN
        RAISE EXCEPTION 'posting set is sealed: postings can only be added by the transaction that created it, before balance checks run'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_postings_sealed_set';
    END IF;
    RETURN NULL;
END;
$$;

-- 3. The closed-month check reads closed_periods after taking the close
--    lock; under REPEATABLE READ it would read a snapshot older than a
--    close that committed meanwhile, so sets are written at READ COMMITTED
--    (SERIALIZABLE would fail on the conflict instead, and is allowed).
CREATE OR REPLACE FUNCTION ledger_refuse_closed_month() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('transaction_isolation') = 'repeatable read' THEN
        RAISE EXCEPTION 'posting sets are written at READ COMMITTED, not REPEATABLE READ'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    PERFORM pg_advisory_xact_lock_shared(7261003);
    -- Generated columns are not computed yet in a BEFORE trigger.
    IF EXISTS (SELECT 1 FROM closed_periods WHERE month = date_trunc('month', NEW.competence::timestamp)::date) THEN
        RAISE EXCEPTION 'competence month % is closed', to_char(NEW.competence, 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    RETURN NEW;
END;
$$;

-- 4. New divergence reasons: a refund of a payment that is not the one
--    booked, a refund id seen again with another amount, a refund parked
--    too long without its payment.
ALTER TABLE divergences DROP CONSTRAINT ck_divergences_reason;
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_reason CHECK (reason IN ('unknown_charge', 'amount_mismatch',
    'currency_mismatch', 'refund_exceeds_paid', 'refund_amount_missing', 'malformed', 'disputed', 'second_payment',
    'processing_failed', 'refund_of_other_payment', 'refund_amount_changed', 'refund_without_payment'));

-- 5. An export waits for its month to close: the file of a month that can
--    still change would be stale the day after.
ALTER TABLE export_runs DROP CONSTRAINT ck_export_runs_status;
ALTER TABLE export_runs ADD CONSTRAINT ck_export_runs_status CHECK (status IN ('running', 'waiting', 'succeeded', 'failed'));
