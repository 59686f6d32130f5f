-- Invariant 2, checked at COMMIT: trg_posting_sets_balanced (a CONSTRAINT
-- TRIGGER AFTER INSERT on posting_sets, DEFERRABLE INITIALLY DEFERRED, each
-- row, enabled ALWAYS).
--
-- * A set has at least two postings and sums to zero per currency
--   (sql/0001).
-- * The set's amount is the sum of its debits in its currency (sql/0009),
--   so the refund cap (ledger_check_refunds_within_sale), which compares
--   set amounts, compares money the postings actually move.
-- * No session state (sql/0012): any client can clear a custom setting
--   with set_config, so no flag (such as sql/0009's razao.balance_checked)
--   tells the sealed-set trigger that this check ran.
--   ledger_refuse_sealed_set has a set's postings all written by one
--   statement instead, so this check, at COMMIT or earlier under SET
--   CONSTRAINTS ... IMMEDIATE, sees every leg the set will ever have.
-- * The refund cap is not here but in ledger_check_refunds_within_sale
--   (sql/0012), which must run as the owner.
-- * Sums are numeric and every comparison is between one type (sql/0012):
--   a comparison of a numeric sum with an integer literal has no exact
--   match in pg_catalog, so an operator of exactly those types in a schema
--   on the search path would win over pg_catalog's, which needs a cast.
-- * A set's postings are read in its own month (sql/0056): postings is
--   partitioned by competence_month, and ledger_refuse_sealed_set has
--   every posting of a set in the set's month, so the read prunes to one
--   partition rather than probing each month's.
-- * row_security = off (sql/0035): the owner could enable row-level
--   security on postings with a policy that hides a leg from the writer,
--   and this check would sum the legs it is shown (+100/-100/+13 would
--   pass as balanced). A query a policy would filter fails instead.
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_check_posting_set()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    legs         bigint;
    debits       numeric;
    total        numeric;
    currencies   bigint;
    unbalanced   text;
BEGIN
    SELECT count(*), coalesce(sum(amount::numeric) FILTER (WHERE amount > 0::bigint AND currency = NEW.currency), 0::numeric),
           coalesce(sum(amount::numeric), 0::numeric), count(DISTINCT currency)
        INTO legs, debits, total, currencies FROM postings WHERE posting_set_id = NEW.id AND competence_month = NEW.competence_month;
    IF legs < 2::bigint THEN
        RAISE EXCEPTION 'posting set % has % posting(s); at least 2 are required', NEW.id, legs
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_balanced';
    END IF;
    IF currencies > 1::bigint OR total <> 0::numeric THEN
        SELECT string_agg(currency::text || ' ' || s::text, ', ') INTO unbalanced FROM (
            SELECT currency, sum(amount::numeric) AS s FROM postings
            WHERE posting_set_id = NEW.id AND competence_month = NEW.competence_month GROUP BY currency HAVING sum(amount::numeric) <> 0::numeric
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
$function$;
