-- Pre-loads a fresh razao database with :n paid charges, so the load test
-- runs against tables, indexes and plans of a realistic size. Per charge:
-- the charge, its access grant, its processed inbox delivery, a sale and a
-- commission posting set (2 postings each); every 10th charge also has a
-- refund of half its amount with its commission reversal and inbox row.
-- Every set balances and the totals reconcile, so `razao verify` must
-- pass afterwards.
--
-- The ledger's triggers refuse UPDATE/DELETE and check every set at
-- COMMIT; for this bulk load only they are disabled inside the same
-- transaction, and every one of them is re-enabled ALWAYS before COMMIT, so
-- no other session ever sees the ledger unguarded.
--
-- Run: psql -v ON_ERROR_STOP=1 -v n=200000 -f preload.sql
\set ON_ERROR_STOP on
\timing off
SET client_min_messages = warning;
BEGIN;

-- 50 partners' payable accounts, as the ledger would create them on first use.
INSERT INTO accounts (code, type, normal_side, currency, parent_id)
SELECT 'liabilities:commission-payable:pre-p' || k, p.type, p.normal_side, p.currency, p.id
FROM generate_series(0, 49) k, accounts p
WHERE p.code = 'liabilities:commission-payable';

CREATE TEMP TABLE pre ON COMMIT DROP AS
SELECT g,
       a,
       a / 10 AS c,                                   -- floor(A·1000/10000)
       CASE WHEN g % 10 = 0 THEN a / 2 ELSE 0 END AS r,
       CASE WHEN g % 10 = 0 THEN (a / 10) * (a / 2) / a ELSE 0 END AS rev,
       t,
       (t AT TIME ZONE 'America/Sao_Paulo')::date AS d,
       t + interval '3 days' AS t2,
       ((t + interval '3 days') AT TIME ZONE 'America/Sao_Paulo')::date AS d2,
       'pre-p' || (g % 50) AS partner
FROM (
    SELECT g, 1000 + (g * 7919) % 9000 AS a,
           timestamptz '2025-01-01 12:00:00+00' + (g % 600) * interval '1 day' + (g % 86400) * interval '1 second' AS t
    FROM generate_series(1, :n) g
) x;

INSERT INTO charges (id, amount, currency, partner, commission_bp, access, state, paid_amount, fee, commission,
                     paid_at, refunded_amount, request_hash, created_at, updated_at)
SELECT 'pre-' || g, a, 'BRL', partner, 1000, 'course:preload',
       CASE WHEN r > 0 THEN 'partially_refunded' ELSE 'paid' END,
       a, 0, c, t, r, 'preload', t - interval '10 minutes', t
FROM pre;

INSERT INTO access_grants (charge_id, access, granted_at)
SELECT 'pre-' || g, 'course:preload', t FROM pre;

INSERT INTO inbox (id, delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref,
                   event, body, headers, status, attempts, next_attempt_at, received_at, processed_at)
SELECT g, 'psp|charge.paid|wh-pre-' || g, 'psp', 'standard', 'loja-dev', 'charge.paid', 'wh-pre-' || g, 'paid', 'pre-' || g,
       jsonb_build_object('Kind', 'paid', 'Type', 'charge.paid', 'EventID', 'wh-pre-' || g, 'ChargeID', 'pre-' || g,
                          'Amount', a, 'HasAmount', true, 'OccurredAt', t),
       convert_to(json_build_object('type', 'charge.paid', 'timestamp', t,
                  'data', json_build_object('charge_id', 'pre-' || g, 'amount', a, 'occurred_at', t))::text, 'UTF8'),
       jsonb_build_object('Content-Type', 'application/json', 'Webhook-Id', 'wh-pre-' || g,
                          'Webhook-Timestamp', extract(epoch FROM t)::bigint::text, 'Webhook-Signature', 'v1,preload'),
       'processed', 1, t, t, t
FROM pre
UNION ALL
SELECT :n + g, 'psp|charge.refunded|wh-pre-' || g || '-r1', 'psp', 'standard', 'loja-dev', 'charge.refunded',
       'wh-pre-' || g || '-r1', 'refunded', 'pre-' || g,
       jsonb_build_object('Kind', 'refunded', 'Type', 'charge.refunded', 'EventID', 'wh-pre-' || g || '-r1',
                          'ChargeID', 'pre-' || g, 'RefundID', 'r1', 'Amount', r, 'HasAmount', true, 'OccurredAt', t2),
       convert_to(json_build_object('type', 'charge.refunded', 'timestamp', t2,
                  'data', json_build_object('charge_id', 'pre-' || g, 'amount', r, 'refund_id', 'r1', 'occurred_at', t2))::text, 'UTF8'),
       jsonb_build_object('Content-Type', 'application/json', 'Webhook-Id', 'wh-pre-' || g || '-r1',
                          'Webhook-Timestamp', extract(epoch FROM t2)::bigint::text, 'Webhook-Signature', 'v1,preload'),
       'processed', 1, t2, t2, t2
FROM pre WHERE r > 0;
SELECT setval('inbox_id_seq', (SELECT max(id) FROM inbox));

ALTER TABLE posting_sets DISABLE TRIGGER USER;
ALTER TABLE postings DISABLE TRIGGER USER;

-- Set ids: 4g-3 sale, 4g-2 commission, 4g-1 refund, 4g reversal.
INSERT INTO posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at,
                          charge_id, refund_id, partner, inbox_id, content_hash, created_at)
SELECT 4 * g - 3, 'sale', 'sale:pre-' || g, a, 'BRL', d, t, 'pre-' || g, NULL, NULL, g, 'preload', t FROM pre
UNION ALL
SELECT 4 * g - 2, 'commission', 'commission:pre-' || g, c, 'BRL', d, t, 'pre-' || g, NULL, partner, g, 'preload', t FROM pre
UNION ALL
SELECT 4 * g - 1, 'refund', 'refund:pre-' || g || ':r1', r, 'BRL', d2, t2, 'pre-' || g, 'r1', NULL, :n + g, 'preload', t2
FROM pre WHERE r > 0
UNION ALL
SELECT 4 * g, 'commission_reversal', 'commission_reversal:pre-' || g || ':r1', rev, 'BRL', d2, t2, 'pre-' || g, 'r1',
       partner, :n + g, 'preload', t2
FROM pre WHERE rev > 0;
SELECT setval('posting_sets_id_seq', (SELECT max(id) FROM posting_sets));
-- Every set's unique keys (sql/0054), which the disabled trigger would
-- have written.
INSERT INTO posting_set_keys (id, idempotency_key, kind, competence, amount, charge_id, refund_id, reverses)
SELECT id, idempotency_key, kind, competence, amount, charge_id, refund_id, reverses FROM posting_sets;

WITH acc AS (
    SELECT max(id) FILTER (WHERE code = 'assets:cash') AS cash,
           max(id) FILTER (WHERE code = 'income:revenue') AS revenue,
           max(id) FILTER (WHERE code = 'expenses:commission') AS commission
    FROM accounts
), legs AS (
    SELECT 4 * g - 3 AS set_id, acc.cash AS account_id, a AS amount, d AS day FROM pre, acc
    UNION ALL SELECT 4 * g - 3, acc.revenue, -a, d FROM pre, acc
    UNION ALL SELECT 4 * g - 2, acc.commission, c, d FROM pre, acc
    UNION ALL SELECT 4 * g - 2, pa.id, -c, d FROM pre JOIN accounts pa ON pa.code = 'liabilities:commission-payable:' || pre.partner
    UNION ALL SELECT 4 * g - 1, acc.revenue, r, d2 FROM pre, acc WHERE r > 0
    UNION ALL SELECT 4 * g - 1, acc.cash, -r, d2 FROM pre, acc WHERE r > 0
    UNION ALL SELECT 4 * g, pa.id, rev, d2 FROM pre JOIN accounts pa ON pa.code = 'liabilities:commission-payable:' || pre.partner WHERE rev > 0
    UNION ALL SELECT 4 * g, acc.commission, -rev, d2 FROM pre, acc WHERE rev > 0
)
INSERT INTO postings (posting_set_id, account_id, currency, amount, competence_month)
SELECT set_id, account_id, 'BRL', amount, date_trunc('month', day)::date FROM legs ORDER BY set_id;

-- Re-enable every ledger trigger as ALWAYS (what migration 0001 does),
-- by name: ENABLE ALWAYS TRIGGER takes no USER.
DO $$
DECLARE t record;
BEGIN
    FOR t IN SELECT c.relname, g.tgname FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
             WHERE c.relname IN ('posting_sets', 'postings') AND NOT g.tgisinternal
    LOOP
        EXECUTE format('ALTER TABLE %I ENABLE ALWAYS TRIGGER %I', t.relname, t.tgname);
    END LOOP;
END;
$$;

-- Refuse to commit if any ledger trigger is not back ALWAYS.
DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid
               WHERE c.relname IN ('posting_sets', 'postings') AND NOT g.tgisinternal AND g.tgenabled <> 'A') THEN
        RAISE EXCEPTION 'a ledger trigger is not enabled ALWAYS after the preload';
    END IF;
END;
$$;
COMMIT;

VACUUM (ANALYZE) accounts, charges, access_grants, inbox, posting_sets, postings, posting_set_keys;
SELECT 'preloaded' AS what,
       (SELECT count(*) FROM charges) AS charges,
       (SELECT count(*) FROM inbox) AS inbox,
       (SELECT count(*) FROM posting_sets) AS posting_sets,
       (SELECT count(*) FROM postings) AS postings;
