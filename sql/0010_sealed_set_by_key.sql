-- 0010: the sealed-set check looks each set up by its primary key.
-- Its join of the statement's new postings with posting_sets was planned
-- (once, generically, for a transition table of unknown size) as a hash
-- join over a sequential scan of posting_sets: every posting statement
-- read the whole table, a cost that grew with the ledger.
CREATE OR REPLACE FUNCTION ledger_refuse_sealed_set() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    set_id  bigint;
    set_xid xid8;
BEGIN
    IF current_setting('razao.balance_checked', true) = 'yes' THEN
        RAISE EXCEPTION 'posting set is sealed: postings can only be added by the transaction that created it, before balance checks run'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_postings_sealed_set';
    END IF;
    FOR set_id IN SELECT DISTINCT posting_set_id FROM new_postings LOOP
        SELECT created_xid INTO set_xid FROM posting_sets WHERE id = set_id;
        IF set_xid IS DISTINCT FROM pg_current_xact_id() THEN
            RAISE EXCEPTION 'posting set is sealed: postings can only be added by the transaction that created it, before balance checks run'
                USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_postings_sealed_set';
        END IF;
    END LOOP;
    RETURN NULL;
END;
$$;
