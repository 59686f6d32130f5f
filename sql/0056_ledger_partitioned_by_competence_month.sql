-- 0056: posting_sets and postings become tables partitioned by
-- competence month (declarative partitioning), converted in place under
-- one short ACCESS EXCLUSIVE lock: no row is copied or read here.
--
-- The design (docs/partitions.md tells the operator's side):
--
--   * Partition key. postings by competence_month; posting_sets by
--     competence, in month ranges (its competence_month is a generated
--     column, which PostgreSQL does not allow as a partition key; the
--     ranges make each partition exactly one competence_month). A set's
--     competence is known when it is written (periods.Competence moves a
--     late event to the first open month before the INSERT), and a row
--     never changes partition: the ledger is append-only.
--   * The partitions. posting_sets_past and postings_past are the tables
--     as they were, attached as one partition from MINVALUE to the bound
--     0054 chose (the month after next, when it ran); 0055 validated a
--     CHECK that implies that range, so ATTACH PARTITION does not read
--     them. After it, one partition a month (posting_sets_2027_02,
--     postings_2027_02...), made ahead by ledger_ensure_month_partitions,
--     which periods.Close calls before every close (four months after the
--     month it closes), and an operator may call. Not here: each table it
--     makes would be made under this migration's lock. A DEFAULT
--     partition of each table takes a set dated in a month that has no
--     partition yet: it is booked, under every trigger; nothing is
--     refused for want of a table (see the function on what such a month
--     becomes).
--   * Unique business keys. A partitioned table's unique index must
--     include the partition key, and no business key implies the month (a
--     redelivery after a close is dated in the first open month: a key
--     unique per month would book it twice). So they live in
--     posting_set_keys (0054), unpartitioned: the idempotency key, one
--     sale and one commission per charge, one refund and one reversal per
--     PSP refund, one reversal per set, under the names the indexes had
--     on posting_sets (razao maps refusals by name). Every set matches its
--     key (ledger_keep_set_keys). A set's id is its partition's primary
--     key; with the key's competence it is unique in the ledger.
--   * Foreign keys into posting_sets. divergences.resolution_set_id now
--     references posting_set_keys (id): one key row is one set, for ever.
--     postings' own were replaced by ledger_refuse_sealed_set (0034).
--   * The barrier. Row triggers (append-only, the balance and refund cap
--     checked at commit) are defined on the parents and cloned by
--     PostgreSQL onto every partition, present and future, enabled
--     ALWAYS as the parent's. Statement triggers (the close lock, the
--     closed-month, created_xid and key checks, the sealed set, TRUNCATE
--     refused) are not cloned: a partition written by name fires its own
--     and not its parent's. Each partition carries a copy of each
--     (ledger_ensure_month_partitions copies them from the parent; the
--     past partitions kept theirs), and razao verify holds every
--     partition to its parent's triggers.
--   * A closed month. Its partitions take no new set (the closed-month
--     check), no UPDATE, DELETE or TRUNCATE (the triggers), whoever
--     writes, by the parent or by name. Moving one to slower storage is
--     ALTER TABLE posting_sets_2027_02 SET TABLESPACE slow (and its
--     indexes, and postings_2027_02's): docs/partitions.md.
--   * Grants. The parents get the grants the tables had; the past
--     partitions lose them: a partition is written through its parent.
--
-- A release before this one keeps running on the partitioned tables (an
-- expand, not a contract): its INSERT into posting_sets gets its keys
-- from trg_posting_sets_keys. What it loses is only its replay: a
-- business key written twice is refused by the key's unique index (under
-- the name it knew) where it did nothing, so its transaction rolls back
-- and is retried, or answered as a conflict. From this migration's commit
-- to the new ledger_refuse_sealed_set (applied by the same migrate, right
-- after), postings are refused (the old body reads ONLY posting_sets,
-- which holds no row now): their transactions roll back and are retried.
--
-- First, with no lock on the ledger: the partitioned tables, under names
-- of their own, with their indexes (under names of their own too: the
-- tables' indexes hold the names until the lock), their triggers and
-- their DEFAULT partitions. LIKE reads the tables' definitions only.
CREATE TABLE posting_sets_partitioned (LIKE posting_sets INCLUDING DEFAULTS INCLUDING GENERATED INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (competence);
ALTER TABLE posting_sets_partitioned DROP CONSTRAINT ck_posting_sets_past;
CREATE TABLE postings_partitioned (LIKE postings INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
    PARTITION BY RANGE (competence_month);
ALTER TABLE postings_partitioned DROP CONSTRAINT ck_postings_past;

-- Each defined exactly as the table's index it takes the name of, so that
-- the past partitions' indexes are attached to them, not built.
CREATE INDEX ix_posting_sets_amount_id_p ON posting_sets_partitioned USING btree (amount, id);
CREATE INDEX ix_posting_sets_charge_p ON posting_sets_partitioned USING btree (charge_id) WHERE (charge_id IS NOT NULL);
CREATE INDEX ix_posting_sets_competence_id_p ON posting_sets_partitioned USING btree (competence, id);
CREATE INDEX ix_posting_sets_competence_month_p ON posting_sets_partitioned USING btree (competence_month, id);
CREATE INDEX ix_posting_sets_event_at_p ON posting_sets_partitioned USING btree (event_at) WHERE (kind = ANY (ARRAY['sale'::text, 'refund'::text]));
CREATE INDEX ix_posting_sets_event_day_p ON posting_sets_partitioned USING btree ((((event_at AT TIME ZONE 'UTC'::text))::date), id) INCLUDE (event_at);
CREATE INDEX ix_posting_sets_event_id_p ON posting_sets_partitioned USING btree (event_at, id);
CREATE INDEX ix_posting_sets_event_month_p ON posting_sets_partitioned USING btree (date_trunc('month'::text, (event_at AT TIME ZONE 'UTC'::text)), id) INCLUDE (event_at);
CREATE INDEX ix_posting_sets_kind_id_p ON posting_sets_partitioned USING btree (kind, id);
CREATE INDEX ix_posting_sets_month_xid_p ON posting_sets_partitioned USING btree (competence_month, created_xid);
CREATE INDEX ix_posting_sets_partner_id_p ON posting_sets_partitioned USING btree (partner, id) WHERE (partner IS NOT NULL);
CREATE INDEX ix_posting_sets_partner_payouts_p ON posting_sets_partitioned USING btree (partner, id) WHERE (kind = 'payout'::text);
CREATE INDEX ix_postings_account_month_p ON postings_partitioned USING btree (account_id, competence_month) INCLUDE (amount);
CREATE INDEX ix_postings_account_set_p ON postings_partitioned USING btree (account_id, posting_set_id);
CREATE INDEX ix_postings_set_p ON postings_partitioned USING btree (posting_set_id);

-- The barrier, on the parents. Row triggers are cloned onto every
-- partition, present and future; statement triggers are copied onto each
-- (below for the DEFAULT partitions; the past partitions have their own,
-- the tables', kept through the rename; ledger_ensure_month_partitions
-- copies them onto each month).
CREATE TRIGGER trg_posting_sets_append_only BEFORE UPDATE OR DELETE ON posting_sets_partitioned
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
CREATE CONSTRAINT TRIGGER trg_posting_sets_balanced AFTER INSERT ON posting_sets_partitioned
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION ledger_check_posting_set();
CREATE CONSTRAINT TRIGGER trg_refunds_within_sale AFTER INSERT ON posting_sets_partitioned
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW WHEN (NEW.kind = 'refund') EXECUTE FUNCTION ledger_check_refunds_within_sale();
CREATE TRIGGER trg_postings_append_only BEFORE UPDATE OR DELETE ON postings_partitioned
    FOR EACH ROW EXECUTE FUNCTION ledger_refuse_change();
DO $$
DECLARE
    t text;
BEGIN
    FOREACH t IN ARRAY ARRAY['posting_sets_partitioned', 'posting_sets_default'] LOOP
        IF t = 'posting_sets_default' THEN
            CREATE TABLE posting_sets_default PARTITION OF posting_sets_partitioned
                (CONSTRAINT posting_sets_default_pkey PRIMARY KEY (id)) DEFAULT;
        END IF;
        EXECUTE format('CREATE TRIGGER trg_posting_sets_no_truncate BEFORE TRUNCATE ON %I
            FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()', t);
        EXECUTE format('CREATE TRIGGER trg_posting_sets_open_month BEFORE INSERT ON %I
            FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_closed_month()', t);
        EXECUTE format('CREATE TRIGGER trg_posting_sets_keys AFTER INSERT ON %I REFERENCING NEW TABLE AS new_sets
            FOR EACH STATEMENT EXECUTE FUNCTION ledger_keep_set_keys()', t);
        EXECUTE format('CREATE TRIGGER trg_posting_sets_written_open AFTER INSERT ON %I REFERENCING NEW TABLE AS new_sets
            FOR EACH STATEMENT EXECUTE FUNCTION ledger_check_new_sets()', t);
    END LOOP;
    FOREACH t IN ARRAY ARRAY['postings_partitioned', 'postings_default'] LOOP
        IF t = 'postings_default' THEN
            CREATE TABLE postings_default PARTITION OF postings_partitioned
                (CONSTRAINT postings_default_pkey PRIMARY KEY (id)) DEFAULT;
        END IF;
        EXECUTE format('CREATE TRIGGER trg_postings_no_truncate BEFORE TRUNCATE ON %I
            FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change()', t);
        EXECUTE format('CREATE TRIGGER trg_postings_sealed_set AFTER INSERT ON %I REFERENCING NEW TABLE AS new_postings
            FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_sealed_set()', t);
    END LOOP;
    -- Every trigger fires ALWAYS, under session_replication_role =
    -- replica too; a parent's state passes to its clones.
    FOREACH t IN ARRAY ARRAY['posting_sets_partitioned', 'posting_sets_default', 'postings_partitioned', 'postings_default'] LOOP
        EXECUTE (SELECT string_agg(format('ALTER TABLE %I ENABLE ALWAYS TRIGGER %I', t, g.tgname), '; ')
            FROM pg_trigger g WHERE g.tgrelid = t::regclass AND NOT g.tgisinternal AND g.tgparentid = 0);
    END LOOP;
END
$$;

-- Then the lock: posting_sets, then postings (the order a posting
-- transaction writes them), held until this migration commits. Nothing
-- below reads a row of the ledger.
LOCK TABLE posting_sets, postings IN ACCESS EXCLUSIVE MODE;

-- The business keys are posting_set_keys' alone now.
ALTER TABLE divergences DROP CONSTRAINT divergences_resolution_set_id_fkey;
ALTER TABLE posting_sets DROP CONSTRAINT uq_posting_sets_idempotency_key;
DROP INDEX uq_sale_per_charge, uq_commission_per_charge, uq_refund_per_psp_refund, uq_reversal_per_psp_refund,
    uq_posting_sets_reverses;
ALTER TABLE posting_set_keys RENAME CONSTRAINT uq_posting_set_keys_idempotency_key TO uq_posting_sets_idempotency_key;
ALTER INDEX uq_posting_set_keys_sale RENAME TO uq_sale_per_charge;
ALTER INDEX uq_posting_set_keys_commission RENAME TO uq_commission_per_charge;
ALTER INDEX uq_posting_set_keys_refund RENAME TO uq_refund_per_psp_refund;
ALTER INDEX uq_posting_set_keys_reversal RENAME TO uq_reversal_per_psp_refund;
ALTER INDEX uq_posting_set_keys_reverses RENAME TO uq_posting_sets_reverses;

-- Row triggers are the parents' from here on, cloned onto each partition:
-- a partition attached with one of the same name would be refused.
DROP TRIGGER trg_posting_sets_append_only ON posting_sets;
DROP TRIGGER trg_posting_sets_balanced ON posting_sets;
DROP TRIGGER trg_refunds_within_sale ON posting_sets;
DROP TRIGGER trg_postings_append_only ON postings;

-- The tables become the past partitions and give their names, and their
-- indexes' names, to the partitioned tables.
ALTER TABLE posting_sets RENAME TO posting_sets_past;
ALTER TABLE postings RENAME TO postings_past;
ALTER TABLE posting_sets_past RENAME CONSTRAINT posting_sets_pkey TO posting_sets_past_pkey;
ALTER TABLE postings_past RENAME CONSTRAINT postings_pkey TO postings_past_pkey;
ALTER TABLE posting_sets_partitioned RENAME TO posting_sets;
ALTER TABLE postings_partitioned RENAME TO postings;
DO $$
DECLARE
    ix record;
BEGIN
    FOR ix IN SELECT c.relname FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
        WHERE i.indrelid IN ('posting_sets_past'::regclass, 'postings_past'::regclass) AND c.relname LIKE 'ix\_%'
    LOOP
        EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.relname,
            replace(replace(ix.relname, 'ix_posting_sets_', 'posting_sets_past_'), 'ix_postings_', 'postings_past_'));
        EXECUTE format('ALTER INDEX %I RENAME TO %I', ix.relname || '_p', ix.relname);
    END LOOP;
END
$$;
ALTER SEQUENCE posting_sets_id_seq OWNED BY posting_sets.id;
ALTER SEQUENCE postings_id_seq OWNED BY postings.id;

-- The past partitions, up to the bound of the checks 0055 validated: no
-- scan of theirs, and the DEFAULT partitions, read for rows of that
-- range, are empty.
DO $$
DECLARE
    bound date;
BEGIN
    SELECT substring(pg_get_constraintdef(c.oid) FROM '''([0-9-]+)''')::date INTO STRICT bound FROM pg_constraint c
        WHERE c.conrelid = 'posting_sets_past'::regclass AND c.conname = 'ck_posting_sets_past';
    EXECUTE format('ALTER TABLE posting_sets ATTACH PARTITION posting_sets_past FOR VALUES FROM (MINVALUE) TO (%L)', bound);
    EXECUTE format('ALTER TABLE postings ATTACH PARTITION postings_past FOR VALUES FROM (MINVALUE) TO (%L)', bound);
END
$$;

-- divergences is small: the key is checked in place.
ALTER TABLE divergences ADD CONSTRAINT divergences_resolution_set_id_fkey
    FOREIGN KEY (resolution_set_id) REFERENCES posting_set_keys (id);

-- The tables' grants go to the parents; the partitions are written
-- through them.
DO $$
DECLARE
    g record;
BEGIN
    FOR g IN
        SELECT t.parent, t.part, a.privilege_type, CASE a.grantee WHEN 0 THEN 'PUBLIC' ELSE quote_ident(r.rolname) END AS who
        FROM (VALUES ('posting_sets', 'posting_sets_past'), ('postings', 'postings_past')) AS t (parent, part)
        JOIN pg_class c ON c.oid = t.part::regclass
        CROSS JOIN LATERAL aclexplode(c.relacl) a
        LEFT JOIN pg_roles r ON r.oid = a.grantee
        WHERE a.grantee <> c.relowner
    LOOP
        EXECUTE format('GRANT %s ON %I TO %s', g.privilege_type, g.parent, g.who);
        EXECUTE format('REVOKE %s ON %I FROM %s', g.privilege_type, g.part, g.who);
    END LOOP;
END
$$;

REVOKE ALL ON FUNCTION ledger_ensure_month_partitions(date) FROM PUBLIC;
