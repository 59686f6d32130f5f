-- Guards postings after each INSERT statement, on the statement's new
-- rows: trg_postings_sealed_set (AFTER INSERT, REFERENCING NEW TABLE AS
-- new_postings, FOR EACH STATEMENT, enabled ALWAYS).
--
-- * A set, once written, is sealed (sql/0001): postings join only a set
--   of their own transaction, so the balance check at its commit stays
--   true. A set's postings are all written by one statement (sql/0012),
--   the one after which this trigger finds every posting of the set
--   among the statement's new rows; a later statement adding legs
--   to a set, committed or not, is refused. The balance check
--   (ledger_check_posting_set), at COMMIT or earlier under SET CONSTRAINTS
--   ... IMMEDIATE, therefore sees every leg the set will ever have, with
--   no flag to remember that it ran (sql/0009's razao.balance_checked,
--   which any client can clear).
-- * It does the work of two foreign keys on postings, which sql/0034
--   dropped (their per-row lookups would be most of what writing postings
--   costs: docs/performance.md, "Ledger guards once per statement"):
--   every new posting is on an existing account of its currency
--   (fk_postings_account_currency, checked first), in an existing set of
--   its own competence month (fk_postings_set_month). The errors keep the
--   keys' names and SQLSTATE. Neither lookup locks: an account or a set
--   can never be updated or deleted, by any role (ledger_refuse_change),
--   and these triggers fire ALWAYS, under session_replication_role =
--   replica too, where a foreign key's do not. accounts is read ONLY, as a
--   foreign key does: a row of a table inheriting from it (which no
--   trigger guards) is no account. posting_sets is partitioned (sql/0056):
--   read ONLY, it has no rows; no table can inherit from it, and each of
--   its partitions carries the barrier (razao verify checks it).
-- * The set is looked up in the posting's month only, and the set's legs
--   counted there (sql/0056): a set's postings are in its month, so the
--   lookups prune to one partition of each table, not one probe a month.
-- * Each set is read once and each (account, currency) once per
--   statement, not once per posting (sql/0036), each set by its key
--   (sql/0010): a join planned for a transition table of unknown size
--   would scan all of posting_sets. When a statement breaks both the
--   month and the sealing rule, the month's error is the one raised.
-- * Every comparison is between one type, and every function and
--   aggregate an exact match in pg_catalog (see ledger_check_posting_set
--   on operators).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_refuse_sealed_set()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
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
        FROM (SELECT n.posting_set_id, n.added, n.first_month, s.created_xid,
                     s.id IS NULL OR n.first_month <> s.competence_month OR n.last_month <> s.competence_month AS wrong_month
              FROM (SELECT posting_set_id, count(*) AS added, min(competence_month) AS first_month,
                           max(competence_month) AS last_month
                    FROM new_postings GROUP BY posting_set_id) n
              LEFT JOIN posting_sets s ON s.id = n.posting_set_id
                  AND s.competence >= n.first_month AND s.competence < (n.first_month + '1 mon'::interval)::date) c
        WHERE c.wrong_month OR c.created_xid <> pg_current_xact_id()
           OR (SELECT count(*) FROM postings p WHERE p.posting_set_id = c.posting_set_id AND p.competence_month = c.first_month) <> c.added
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
$function$;
