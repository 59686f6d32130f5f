-- Scratch copies of razao's tables for the pgbench ceiling, in the load
-- database: same columns, defaults, checks, indexes and foreign keys to
-- accounts, but none of the ledger's triggers, their own sequences, and
-- the same number of rows as the real tables (copied), so index depths
-- and plans match. Nothing here touches the ledger's own tables.
\set ON_ERROR_STOP on
SET client_min_messages = warning;
BEGIN;
DROP TABLE IF EXISTS bench_postings, bench_posting_sets, bench_charges, bench_inbox, bench_outbox, bench_grants;

CREATE TABLE bench_charges (LIKE charges INCLUDING ALL);
INSERT INTO bench_charges SELECT * FROM charges;

CREATE TABLE bench_grants (LIKE access_grants INCLUDING ALL);
INSERT INTO bench_grants SELECT * FROM access_grants;

CREATE TABLE bench_inbox (LIKE inbox INCLUDING ALL);
CREATE SEQUENCE bench_inbox_id_seq OWNED BY bench_inbox.id;
ALTER TABLE bench_inbox ALTER id SET DEFAULT nextval('bench_inbox_id_seq');
INSERT INTO bench_inbox SELECT * FROM inbox;
SELECT setval('bench_inbox_id_seq', (SELECT coalesce(max(id), 1) FROM bench_inbox));
CREATE SEQUENCE bench_key_seq;

CREATE TABLE bench_outbox (LIKE outbox INCLUDING ALL);
CREATE SEQUENCE bench_outbox_id_seq OWNED BY bench_outbox.id;
ALTER TABLE bench_outbox ALTER id SET DEFAULT nextval('bench_outbox_id_seq');
INSERT INTO bench_outbox SELECT * FROM outbox;
SELECT setval('bench_outbox_id_seq', (SELECT coalesce(max(id), 1) FROM bench_outbox));

CREATE TABLE bench_posting_sets (LIKE posting_sets INCLUDING ALL);
CREATE SEQUENCE bench_posting_sets_id_seq OWNED BY bench_posting_sets.id;
ALTER TABLE bench_posting_sets ALTER id SET DEFAULT nextval('bench_posting_sets_id_seq');
INSERT INTO bench_posting_sets (id, kind, idempotency_key, amount, currency, competence, event_at, charge_id,
    refund_id, partner, inbox_id, description, content_hash, created_xid, created_at)
SELECT id, kind, idempotency_key, amount, currency, competence, event_at, charge_id,
    refund_id, partner, inbox_id, description, content_hash, created_xid, created_at FROM posting_sets;
SELECT setval('bench_posting_sets_id_seq', (SELECT coalesce(max(id), 1) FROM bench_posting_sets));

CREATE TABLE bench_postings (LIKE postings INCLUDING ALL);
CREATE SEQUENCE bench_postings_id_seq OWNED BY bench_postings.id;
ALTER TABLE bench_postings ALTER id SET DEFAULT nextval('bench_postings_id_seq');
INSERT INTO bench_postings SELECT * FROM postings;
SELECT setval('bench_postings_id_seq', (SELECT coalesce(max(id), 1) FROM bench_postings));
-- The yardstick keeps the ledger's shape as it was when its target was
-- set, so that its figures stay comparable from run to run: postings
-- checked against their account and set by two foreign keys, and the
-- unique key on (id, competence_month) the second one needs. razao's own
-- ledger does both checks in a statement-level trigger (sql/0034); the
-- copies keep the keys (docs/performance.md, "The pgbench yardstick").
ALTER TABLE bench_posting_sets ADD CONSTRAINT uq_bench_posting_sets_id_month UNIQUE (id, competence_month);
ALTER TABLE bench_postings
    ADD CONSTRAINT fk_bench_postings_account FOREIGN KEY (account_id, currency) REFERENCES accounts (id, currency),
    ADD CONSTRAINT fk_bench_postings_set FOREIGN KEY (posting_set_id, competence_month) REFERENCES bench_posting_sets (id, competence_month);
COMMIT;
VACUUM (ANALYZE) bench_charges, bench_grants, bench_inbox, bench_outbox, bench_posting_sets, bench_postings;
CHECKPOINT;
SELECT 'bench tables' AS what, (SELECT count(*) FROM bench_charges) AS charges, (SELECT count(*) FROM bench_inbox) AS inbox,
       (SELECT count(*) FROM bench_posting_sets) AS posting_sets, (SELECT count(*) FROM bench_postings) AS postings;
