-- The month sums are written by this function alone, as the owner, from
-- the postings (sql/0041); the service role may only read them and call
-- it. month_sums and month_sum_lines (sql/0021) are every report's reading
-- of an open month's postings; could the service role write them, a
-- forged line or snapshot would be read by every report until the next
-- refresh (a snapshot from "the future" would hide every later set of its
-- month, see TestForgedMonthSumsCannotRepeatAPayout). A function that
-- stored sums handed to it would forge as well, so it computes them itself: the
-- stored lines plus the sets their snapshot did not see, or, without
-- stored lines of this cluster, every set of the month; the same reading
-- as the reports' (reports/monthsums.go, monthSumsSQL).
--
-- It answers what it did:
--   stored   the month's sums are those of this transaction's snapshot;
--   held     another refresh holds the month's row: it is left to it;
--   foreign  the month holds sets stamped with transaction ids ahead of
--            this cluster's (a logical restore), so which of them a
--            snapshot sees cannot be told: it keeps no sums;
--   overflow a sum does not fit bigint: nothing is stored, and the
--            month's reports say so from the postings.
-- It runs only in a REPEATABLE READ (or SERIALIZABLE) transaction: the
-- sums and the snapshot stored with them must be of one snapshot, and at
-- READ COMMITTED each statement has its own (a set committed between the
-- sums and the snapshot would count as summed, and never be).
--
-- SECURITY DEFINER: it writes what the service role may not. sql/0041
-- revoked EXECUTE from PUBLIC and granted it to whoever could write the
-- sums before (docs/razao-role.sql grants it to the service role).
-- jit = off: no JIT compilation for a statement run every few seconds.
-- Every comparison is between one type (see ledger_check_posting_set on
-- operators).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION month_sums_refresh(m date)
 RETURNS text
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
 SET jit TO 'off'
AS $function$
DECLARE
    snap    pg_snapshot := pg_current_snapshot();
    old     pg_snapshot;
    revenue bigint[];
    ids     bigint[];
    kinds   text[];
    debits  numeric[];
    credits numeric[];
    sets    bigint[];
    too_big boolean;
BEGIN
    IF current_setting('transaction_isolation') NOT IN ('repeatable read', 'serializable') THEN
        RAISE EXCEPTION 'month_sums_refresh runs in a REPEATABLE READ transaction, not %: its sums and their snapshot must be one',
            upper(current_setting('transaction_isolation'))
            USING ERRCODE = 'invalid_transaction_state';
    END IF;
    -- Another refresh of the month (another replica) holds its row: leave
    -- the month to it. A row lock, which only the owner takes (here): an
    -- advisory lock could be held by any role that can connect. A month
    -- summed for the first time has no row to lock: of two first
    -- refreshes, the second to store fails to serialise (40001).
    PERFORM 1 FROM month_sums s WHERE s.month = m FOR UPDATE SKIP LOCKED;
    IF NOT FOUND AND EXISTS (SELECT 1 FROM month_sums s WHERE s.month = m) THEN
        RETURN 'held';
    END IF;
    IF EXISTS (SELECT 1 FROM posting_sets s WHERE s.competence_month = m AND s.created_xid >= pg_snapshot_xmax(snap)) THEN
        RETURN 'foreign';
    END IF;
    -- Stored sums count only when their snapshot is of this cluster's past.
    SELECT s.snapshot INTO old FROM month_sums s
        WHERE s.month = m AND pg_snapshot_xmax(s.snapshot) <= pg_snapshot_xmax(snap);
    -- The revenue accounts (accounts.Revenue and those under it, in its
    -- currency), summed together as account 0 with their sets counted.
    SELECT coalesce(array_agg(a.id), '{}'::bigint[]) INTO revenue
        FROM accounts a JOIN accounts r ON r.code = 'income:revenue'::text AND r.currency = a.currency
        WHERE a.code = 'income:revenue'::text OR starts_with(a.code, 'income:revenue:'::text);
    SELECT array_agg(x.account_id), array_agg(x.kind), array_agg(x.debits), array_agg(x.credits), array_agg(x.sets),
           coalesce(bool_or(x.debits > 9223372036854775807::numeric OR x.credits > 9223372036854775807::numeric), false)
        INTO ids, kinds, debits, credits, sets, too_big
    FROM (
        WITH r AS MATERIALIZED (
            SELECT p.account_id, s.id AS set_id, s.kind, p.amount
            FROM posting_sets s CROSS JOIN LATERAL (
                SELECT p.account_id, p.amount FROM postings p WHERE p.posting_set_id = s.id OFFSET 0) p
            WHERE old IS NOT NULL AND s.competence_month = m
                AND s.created_xid >= pg_snapshot_xmin(old) AND NOT pg_visible_in_snapshot(s.created_xid, old)
            UNION ALL
            SELECT p.account_id, s.id, s.kind, p.amount
            FROM posting_sets s JOIN postings p ON p.posting_set_id = s.id AND p.competence_month = m
            WHERE old IS NULL AND s.competence_month = m
        ), l AS (
            SELECT r.account_id, r.kind, coalesce(sum(r.amount) FILTER (WHERE r.amount > 0::bigint), 0::numeric) AS debits,
                coalesce(-sum(r.amount) FILTER (WHERE r.amount < 0::bigint), 0::numeric) AS credits, 0::bigint AS sets
            FROM r GROUP BY r.account_id, r.kind
            UNION ALL
            SELECT 0::bigint, r.kind, coalesce(sum(r.amount) FILTER (WHERE r.amount > 0::bigint), 0::numeric),
                coalesce(-sum(r.amount) FILTER (WHERE r.amount < 0::bigint), 0::numeric), count(DISTINCT r.set_id)
            FROM r WHERE r.account_id = ANY (revenue) GROUP BY r.kind
            UNION ALL
            SELECT ml.account_id, ml.kind, ml.debits, ml.credits, ml.sets FROM month_sum_lines ml
            WHERE old IS NOT NULL AND ml.month = m
        )
        SELECT l.account_id, l.kind, sum(l.debits) AS debits, sum(l.credits) AS credits, sum(l.sets)::bigint AS sets
        FROM l GROUP BY l.account_id, l.kind
    ) x;
    IF too_big THEN
        RETURN 'overflow';
    END IF;
    INSERT INTO month_sums (month, snapshot, computed_at) VALUES (m, snap, now())
        ON CONFLICT (month) DO UPDATE SET snapshot = excluded.snapshot, computed_at = excluded.computed_at;
    DELETE FROM month_sum_lines ml WHERE ml.month = m;
    INSERT INTO month_sum_lines (month, account_id, kind, debits, credits, sets)
        SELECT m, u.account_id, u.kind, u.debits, u.credits, u.sets
        FROM unnest(ids, kinds, debits, credits, sets) AS u (account_id, kind, debits, credits, sets);
    RETURN 'stored';
END
$function$;
