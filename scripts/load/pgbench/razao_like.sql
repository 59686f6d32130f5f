-- (c) the SQL of one razao delivery with its effects, raw: the inbox insert
-- committed on its own, then one transaction that locks the inbox row and
-- the charge row, writes a sale and a commission set with two postings
-- each, updates the charge, appends two outbox events and the access
-- grant, and marks the delivery processed. No triggers, no Go.
\set cid random(1, :nch)
INSERT INTO bench_inbox (delivery_key, endpoint, scheme, merchant, event_type, event_id, kind, charge_ref, event, body, headers, status, next_attempt_at)
VALUES ('psp|charge.paid|bench-c-' || nextval('bench_key_seq'), 'psp', 'standard', 'loja-dev', 'charge.paid',
        'bench-c-' || currval('bench_key_seq'), 'paid', 'pre-' || :cid::text,
        '{"Kind": "paid","Type": "charge.paid","EventID": "bench","ChargeID": "bench-charge","PSPRef": "","RefundID": "","Amount": 4990,"HasAmount": true,"FullRefund": false,"Fee": 0,"HasFee": false,"OccurredAt": "2026-08-10T120000Z","Extra": null}',
        convert_to('{"type": "charge.paid","timestamp": "2026-08-10T120000Z","data": {"charge_id": "bench-charge","amount": 4990,"occurred_at": "2026-08-10T120000Z"}}', 'UTF8'),
        '{"Content-Type": "application/json","Webhook-Id": "bench","Webhook-Timestamp": "1786363200","Webhook-Signature": "v1,Jq0Yr8Yx3mVtq5b3b6bN8d0mX0tKc8xL1m9q2o3p4r4="}',
        'pending', now() + interval '5 seconds')
ON CONFLICT (endpoint, event_type, event_id) DO NOTHING
RETURNING id AS inbox_id, currval('bench_key_seq') AS k \gset
BEGIN;
SELECT id, kind, event, attempts, received_at FROM bench_inbox WHERE id = :inbox_id AND status = 'pending' FOR UPDATE SKIP LOCKED;
SELECT * FROM bench_charges WHERE id = 'pre-' || :cid::text FOR UPDATE;
INSERT INTO bench_posting_sets (kind, idempotency_key, amount, currency, competence, event_at, charge_id, inbox_id, content_hash)
VALUES ('sale', 'sale.bench-c-' || :k::text, 4990, 'BRL', current_date, now(), 'bench-c-' || :k::text, :inbox_id, 'bench');
INSERT INTO bench_postings (posting_set_id, account_id, currency, amount, competence_month)
VALUES (currval('bench_posting_sets_id_seq'), :cash, 'BRL', 4990, date_trunc('month', current_date)::date),
       (currval('bench_posting_sets_id_seq'), :revenue, 'BRL', -4990, date_trunc('month', current_date)::date);
INSERT INTO bench_posting_sets (kind, idempotency_key, amount, currency, competence, event_at, charge_id, partner, inbox_id, content_hash)
VALUES ('commission', 'commission.bench-c-' || :k::text, 499, 'BRL', current_date, now(), 'bench-c-' || :k::text, 'pre-p1', :inbox_id, 'bench');
INSERT INTO bench_postings (posting_set_id, account_id, currency, amount, competence_month)
VALUES (currval('bench_posting_sets_id_seq'), :commission, 'BRL', 499, date_trunc('month', current_date)::date),
       (currval('bench_posting_sets_id_seq'), :payable, 'BRL', -499, date_trunc('month', current_date)::date);
UPDATE bench_charges SET updated_at = now() WHERE id = 'pre-' || :cid::text;
INSERT INTO bench_outbox (topic, charge_id, payload) VALUES
    ('charge.paid', 'bench-c-' || :k::text, '{"amount": 4990,"fee": 0}'),
    ('access.granted', 'bench-c-' || :k::text, '{"access": "course-load"}');
INSERT INTO bench_grants (charge_id, access) VALUES ('bench-c-' || :k::text, 'course-load') ON CONFLICT DO NOTHING;
UPDATE bench_inbox SET status = 'processed', processed_at = now(), attempts = attempts + 1 WHERE id = :inbox_id;
END;
