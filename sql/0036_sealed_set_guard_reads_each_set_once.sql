-- 0036: trg_postings_sealed_set reads each new posting's set once per set,
-- and each account once per (account, currency), instead of once per
-- posting.
--
-- After 0034 the guard ran three lookups over the statement's new
-- postings: one into accounts per posting, one into posting_sets per
-- posting (the set exists in the posting's competence month), and one per
-- set (created by this transaction, and every posting of it written by
-- this statement). A worker's statement of 128 sets and 256 postings made
-- 640 index lookups; it now makes one per distinct account and currency
-- (a handful) and one per set. What it guards is unchanged, and so are
-- the errors, their SQLSTATEs and constraint names:
--
--   * every new posting is on an existing account of its currency
--     (fk_postings_account_currency), checked first;
--   * every new posting is in an existing set of its own competence month
--     (fk_postings_set_month): the set exists, and the earliest and the
--     latest competence month among the set's new postings are both the
--     set's;
--   * a set's postings are all written by the one statement, in the
--     transaction that created the set (trg_postings_sealed_set).
--
-- When a statement breaks both of the last two, the month's error is the
-- one raised, as before. Every comparison is between one type, and every
-- function and aggregate an exact match in pg_catalog (see 0012 on
-- operators).

CREATE OR REPLACE FUNCTION ledger_refuse_sealed_set() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    set_id      bigint;
    wrong_month boolean;
BEGIN
    IF EXISTS (SELECT 1 FROM (SELECT DISTINCT account_id, currency FROM new_postings) n
               WHERE NOT EXISTS (SELECT 1 FROM ONLY accounts a WHERE a.id = n.account_id AND a.currency = n.currency)) THEN
        RAISE EXCEPTION 'a posting names an account that does not exist in its currency'
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'fk_postings_account_currency';
    END IF;
    SELECT c.posting_set_id, c.wrong_month INTO set_id, wrong_month
        FROM (SELECT n.posting_set_id, n.added, s.created_xid,
                     s.id IS NULL OR n.first_month <> s.competence_month OR n.last_month <> s.competence_month AS wrong_month
              FROM (SELECT posting_set_id, count(*) AS added, min(competence_month) AS first_month,
                           max(competence_month) AS last_month
                    FROM new_postings GROUP BY posting_set_id) n
              LEFT JOIN ONLY posting_sets s ON s.id = n.posting_set_id) c
        WHERE c.wrong_month OR c.created_xid <> pg_current_xact_id()
           OR (SELECT count(*) FROM postings p WHERE p.posting_set_id = c.posting_set_id) <> c.added
        ORDER BY c.wrong_month DESC
        LIMIT 1;
    IF FOUND AND wrong_month THEN
        RAISE EXCEPTION 'posting set % does not exist in the posting''s competence month', set_id
            USING ERRCODE = 'foreign_key_violation', CONSTRAINT = 'fk_postings_set_month';
    END IF;
    IF FOUND THEN
        RAISE EXCEPTION 'posting set % is sealed: its postings are written by the statement that writes its first, in the transaction that created it', set_id
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_postings_sealed_set';
    END IF;
    RETURN NULL;
END;
$$;

-- CREATE OR REPLACE drops a function's settings: pin both again (see 0012
-- and 0035).
DO $$
BEGIN
    EXECUTE format('ALTER FUNCTION ledger_refuse_sealed_set() SET search_path = pg_catalog, %I, pg_temp', current_schema());
    ALTER FUNCTION ledger_refuse_sealed_set() SET row_security = off;
END
$$;
