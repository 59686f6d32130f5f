-- 0054: the first of three steps that turn posting_sets and postings into
-- tables partitioned by competence month (the design is 0056's header).
-- This one takes no lock longer than a catalog change:
--
--   * posting_set_keys: every unique business key of a posting set, in one
--     table that is never partitioned. A partitioned table's unique index
--     must include its partition key, and no business key implies the
--     month: a delivery redelivered after its month closed is dated in the
--     first open month (periods.Competence), so a key unique per month
--     would book it twice. The keys are one row per set (its id, and the
--     columns every unique index of posting_sets covered), so the indexes
--     that keep the ledger's business keys unique, and the refund cap that
--     sums a charge's refunds, stay on one table whatever the number of
--     months. The indexes carry temporary names until 0056 drops
--     posting_sets' own and gives them theirs: index names are one
--     namespace per schema.
--   * trg_posting_sets_keys (ledger_keep_set_keys): after each INSERT
--     statement on posting_sets, the new sets' keys are written when the
--     writer has not written them (razao writes them first, so that a
--     replay finds the key taken and does nothing), and every new set must
--     match its key row. From here on no set is written without its key;
--     0055 copies the keys of the sets written before.
--   * ck_posting_sets_past and ck_postings_past, NOT VALID: every set and
--     posting is before the month after next. 0055 validates them under a
--     lock that lets writes go on; 0056 then attaches the tables as one
--     partition for every month before that bound, and a validated check
--     that implies the partition's range spares ATTACH PARTITION its scan.
--     An event's competence is its date in the ledger's zone, never after
--     razao's clock plus a scheme's tolerance; a set stated later than the
--     bound, in the moments between this migration and 0056, is refused
--     (its transaction rolls back and is retried), never lost.
CREATE TABLE posting_set_keys (
    -- The set's id: posting_sets_id_seq, taken here by razao's writer and
    -- given to the set; by the trigger, copied from a set written alone.
    id              bigint      NOT NULL DEFAULT nextval('posting_sets_id_seq'),
    idempotency_key text        NOT NULL,
    kind            text        NOT NULL,
    -- Where the set is: its partition is the month of competence.
    competence      date        NOT NULL,
    -- The set's amount: the refund cap (ledger_check_refunds_within_sale)
    -- sums a charge's refunds here, on one index, not on one per month.
    amount          bigint      NOT NULL,
    charge_id       text,
    refund_id       text,
    reverses        bigint,
    CONSTRAINT posting_set_keys_pkey PRIMARY KEY (id),
    CONSTRAINT uq_posting_set_keys_idempotency_key UNIQUE (idempotency_key)
);
CREATE UNIQUE INDEX uq_posting_set_keys_sale ON posting_set_keys (charge_id) WHERE kind = 'sale';
CREATE UNIQUE INDEX uq_posting_set_keys_commission ON posting_set_keys (charge_id) WHERE kind = 'commission';
CREATE UNIQUE INDEX uq_posting_set_keys_refund ON posting_set_keys (charge_id, refund_id) WHERE kind = 'refund';
CREATE UNIQUE INDEX uq_posting_set_keys_reversal ON posting_set_keys (charge_id, refund_id) WHERE kind = 'commission_reversal';
CREATE UNIQUE INDEX uq_posting_set_keys_reverses ON posting_set_keys (reverses) WHERE reverses IS NOT NULL;

-- Append-only, whoever connects, as the ledger it keys.
CREATE TRIGGER trg_posting_set_keys_append_only BEFORE UPDATE OR DELETE ON posting_set_keys
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE TRIGGER trg_posting_set_keys_no_truncate BEFORE TRUNCATE ON posting_set_keys
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE posting_set_keys ENABLE ALWAYS TRIGGER trg_posting_set_keys_append_only;
ALTER TABLE posting_set_keys ENABLE ALWAYS TRIGGER trg_posting_set_keys_no_truncate;

CREATE TRIGGER trg_posting_sets_keys AFTER INSERT ON posting_sets
    REFERENCING NEW TABLE AS new_sets
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_keep_set_keys();
ALTER TABLE posting_sets ENABLE ALWAYS TRIGGER trg_posting_sets_keys;

-- The bound: the first day of the month after next, in UTC (the ledger's
-- zone is behind UTC or equal to it, never ahead by a month).
DO $$
DECLARE
    bound date := (date_trunc('month', now() AT TIME ZONE 'UTC') + interval '2 months')::date;
BEGIN
    EXECUTE format('ALTER TABLE posting_sets ADD CONSTRAINT ck_posting_sets_past CHECK (competence < %L::date) NOT VALID', bound);
    EXECUTE format('ALTER TABLE postings ADD CONSTRAINT ck_postings_past CHECK (competence_month < %L::date) NOT VALID', bound);
END
$$;
