-- 0034: the ledger's guards on new posting sets and postings run once per
-- statement, set-based, instead of once per row.
--
-- A worker writes a batch of deliveries' sets and postings in one
-- statement each (postings.insertSets). Per row, the closed-month trigger
-- and the two foreign keys on postings were most of what writing them
-- cost: 128 sets and their 256 postings took 13-17 ms and 10-15 ms on
-- the 2-core machine, of which the per-row trigger was about a third of
-- the sets' time and the foreign keys' lookups (each locking its account's
-- and its set's row FOR KEY SHARE) two thirds of the postings'. What they
-- guard is unchanged:
--
--   * trg_posting_sets_open_month now runs before each INSERT statement:
--     it refuses any level but READ COMMITTED and takes the close lock
--     (month_close_lock, ROW EXCLUSIVE) before the statement writes a
--     row, as the row trigger did before the first row.
--   * trg_posting_sets_written_open runs after the statement, on its new
--     rows: none is in a closed month (read after the close lock was
--     taken, in a snapshot of its own, so every close that can commit
--     before this transaction has), and each carries its writer's xid.
--     created_xid defaults to pg_current_xact_id(); an INSERT that states
--     another is refused, where the row trigger overwrote it.
--   * trg_postings_sealed_set now also does what the two foreign keys did:
--     every new posting is on an existing account of its currency, and in
--     an existing set of its competence month. Neither lookup locks: an
--     account can never be updated or deleted (trg_accounts_immutable,
--     and trg_accounts_no_truncate below) nor a set (append-only), for any
--     role, and these triggers fire ALWAYS, under session_replication_role
--     = replica too, where a foreign key's do not. The errors keep the
--     keys' names and SQLSTATE. The lookups read ONLY the tables, as the
--     keys did: a row in a table inheriting from accounts or posting_sets
--     (which no trigger of theirs guards) is no account and no set.
--
-- One reach is lost: a logical replication apply worker fires row
-- triggers only, so on a subscriber (which only a superuser can make)
-- neither the closed-month check nor created_xid's is run, as the foreign
-- keys were not either. razao's ledger is written by razao, not replicated
-- into.
--
-- Every comparison below is between one type, and every function call an
-- exact match in pg_catalog (see 0012 on operators).

CREATE OR REPLACE FUNCTION ledger_refuse_closed_month() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'posting sets are written at READ COMMITTED, not %', upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    LOCK TABLE month_close_lock IN ROW EXCLUSIVE MODE;
    RETURN NULL;
END;
$$;
DROP TRIGGER trg_posting_sets_open_month ON posting_sets;
CREATE TRIGGER trg_posting_sets_open_month BEFORE INSERT ON posting_sets
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_closed_month();
ALTER TABLE posting_sets ENABLE ALWAYS TRIGGER trg_posting_sets_open_month;

CREATE FUNCTION ledger_check_new_sets() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    closed date;
BEGIN
    SELECT n.competence_month INTO closed FROM new_sets n JOIN closed_periods c ON c.month = n.competence_month LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'competence month % is closed', to_char(closed::timestamp, 'YYYY-MM')
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_open_month';
    END IF;
    IF EXISTS (SELECT 1 FROM new_sets n WHERE n.created_xid <> pg_current_xact_id()) THEN
        RAISE EXCEPTION 'a posting set''s created_xid is the transaction that writes it'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_posting_sets_written_open';
    END IF;
    RETURN NULL;
END;
$$;
CREATE TRIGGER trg_posting_sets_written_open AFTER INSERT ON posting_sets
    REFERENCING NEW TABLE AS new_sets
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_check_new_sets();
ALTER TABLE posting_sets ENABLE ALWAYS TRIGGER trg_posting_sets_written_open;

ALTER TABLE postings DROP CONSTRAINT fk_postings_account_currency, DROP CONSTRAINT fk_postings_set_month;
-- The set's key was unique on (id, competence_month) only as the target
-- of fk_postings_set_month: id alone is the primary key, and no query
-- reads that index. One index entry fewer per set.
ALTER TABLE posting_sets DROP CONSTRAINT uq_posting_sets_id_month;

-- A set's postings are all written by one statement: the one after which
-- this trigger finds every posting of the set among the statement's new
-- rows. A later statement adding legs to a set, committed or not, is
-- refused. The balance check that runs at COMMIT (or earlier, under SET
-- CONSTRAINTS ... IMMEDIATE) therefore sees every leg the set will ever
-- have, with no flag to remember that it ran.
CREATE OR REPLACE FUNCTION ledger_refuse_sealed_set() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    set_id bigint;
BEGIN
    IF EXISTS (SELECT 1 FROM new_postings n
               WHERE NOT EXISTS (SELECT 1 FROM ONLY accounts a WHERE a.id = n.account_id AND a.currency = n.currency)) THEN
        RAISE EXCEPTION 'a posting names an account that does not exist in its currency'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'fk_postings_account_currency';
    END IF;
    SELECT n.posting_set_id INTO set_id FROM new_postings n
        WHERE NOT EXISTS (SELECT 1 FROM ONLY posting_sets s WHERE s.id = n.posting_set_id AND s.competence_month = n.competence_month)
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'posting set % does not exist in the posting''s competence month', set_id
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'fk_postings_set_month';
    END IF;
    SELECT n.posting_set_id INTO set_id
        FROM (SELECT posting_set_id, count(*) AS added FROM new_postings GROUP BY posting_set_id) n
        JOIN ONLY posting_sets s ON s.id = n.posting_set_id
        WHERE s.created_xid <> pg_current_xact_id()
           OR (SELECT count(*) FROM postings p WHERE p.posting_set_id = n.posting_set_id) <> n.added
        LIMIT 1;
    IF FOUND THEN
        RAISE EXCEPTION 'posting set % is sealed: its postings are written by the statement that writes its first, in the transaction that created it', set_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_postings_sealed_set';
    END IF;
    RETURN NULL;
END;
$$;

-- A TRUNCATE of accounts is refused by a trigger of its own, as every
-- ledger table's is, not only by the foreign keys that still point at it.
CREATE TRIGGER trg_accounts_no_truncate BEFORE TRUNCATE ON accounts
    FOR EACH STATEMENT EXECUTE FUNCTION ledger_refuse_change();
ALTER TABLE accounts ENABLE ALWAYS TRIGGER trg_accounts_no_truncate;

-- CREATE OR REPLACE drops a function's settings: pin them again (see 0012).
DO $$
DECLARE
    f text;
BEGIN
    FOREACH f IN ARRAY ARRAY['ledger_refuse_closed_month()', 'ledger_check_new_sets()', 'ledger_refuse_sealed_set()'] LOOP
        EXECUTE format('ALTER FUNCTION %s SET search_path = pg_catalog, %I, pg_temp', f, current_schema());
    END LOOP;
END
$$;
