-- (a) razao's posting transaction, raw: lock a charge row by primary key,
-- insert one posting set and its two postings, update the locked row.
\set cid random(1, :nch)
BEGIN;
SELECT id, amount, state FROM bench_charges WHERE id = 'pre-' || :cid::text FOR UPDATE;
INSERT INTO bench_posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at, charge_id, content_hash)
VALUES (nextval('bench_posting_sets_id_seq'), 'sale', 'sale.bench-a-' || currval('bench_posting_sets_id_seq'), 4990, 'BRL',
        current_date, now(), 'bench-a-' || currval('bench_posting_sets_id_seq'), 'bench');
INSERT INTO bench_postings (posting_set_id, account_id, currency, amount, competence_month)
VALUES (currval('bench_posting_sets_id_seq'), :cash, 'BRL', 4990, date_trunc('month', current_date)::date),
       (currval('bench_posting_sets_id_seq'), :revenue, 'BRL', -4990, date_trunc('month', current_date)::date);
UPDATE bench_charges SET updated_at = now() WHERE id = 'pre-' || :cid::text;
END;
