-- Keeps posting_set_keys, the one table of every posting set's unique
-- business keys (sql/0054), in step with posting_sets:
-- trg_posting_sets_keys (AFTER INSERT, REFERENCING NEW TABLE AS new_sets,
-- FOR EACH STATEMENT, enabled ALWAYS) on posting_sets and, since sql/0056,
-- on each of its partitions (a statement trigger is not cloned to them).
--
-- * posting_sets is partitioned by competence month (sql/0056), and a
--   partitioned table's unique index must include the month. No business
--   key implies its month (a redelivery after a close is dated in the
--   first open month), so the idempotency key, one sale and one
--   commission per charge, one refund and one reversal per PSP refund and
--   one reversal per set are kept unique here, on one unpartitioned table.
-- * razao's writer (postings.insertSets) writes the keys first, "if
--   absent", and the sets only of the keys it wrote: a replay does
--   nothing, as an INSERT ... ON CONFLICT DO NOTHING on posting_sets did.
--   Any other writer's set gets its key written here, so a duplicate is
--   refused by the key's unique index, under the index's old name
--   (uq_sale_per_charge...).
-- * Every new set then matches its key exactly (id, key, kind, month,
--   amount, charge, refund, reverses): a set cannot borrow another's key
--   row, nor keep a key that says another kind or charge. A set's id is
--   unique within its month's partition (its primary key), and the key's
--   competence says which partition, so one key row is one set.
-- * Each set's key is read by its id, in a subquery per row: a join
--   planned for a transition table of unknown size could scan every key
--   (see ledger_refuse_sealed_set).
-- * Every comparison is between one type (see ledger_check_posting_set on
--   operators).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_keep_set_keys()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    set_id bigint;
BEGIN
    INSERT INTO posting_set_keys (id, idempotency_key, kind, competence, amount, charge_id, refund_id, reverses)
        SELECT n.id, n.idempotency_key, n.kind, n.competence, n.amount, n.charge_id, n.refund_id, n.reverses
        FROM new_sets n
        WHERE (SELECT k.id FROM posting_set_keys k WHERE k.id = n.id) IS NULL;
    SELECT n.id INTO set_id FROM new_sets n
        WHERE (SELECT count(*) FROM posting_set_keys k
               WHERE k.id = n.id AND k.idempotency_key = n.idempotency_key AND k.kind = n.kind
                 AND k.competence = n.competence AND k.amount = n.amount
                 AND k.charge_id IS NOT DISTINCT FROM n.charge_id AND k.refund_id IS NOT DISTINCT FROM n.refund_id
                 AND k.reverses IS NOT DISTINCT FROM n.reverses) <> 1::bigint
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'posting set % does not match its key in posting_set_keys', set_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_keys';
    END IF;
    RETURN NULL;
END;
$function$;
