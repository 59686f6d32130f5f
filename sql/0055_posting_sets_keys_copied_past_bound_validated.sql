-- 0055: the second step (see 0056). Nothing here takes a lock that holds
-- up a posting:
--
--   * VALIDATE CONSTRAINT reads each table under SHARE UPDATE EXCLUSIVE,
--     which lets every INSERT and SELECT go on (0054 added the checks NOT
--     VALID, in a transaction of their own: the ACCESS EXCLUSIVE lock an
--     ADD CONSTRAINT takes would otherwise be held through this scan).
--   * The keys of every set written before 0054's trigger are copied.
--     A set written since has its key already (the trigger wrote it, in
--     the set's transaction): the copy skips it. A set's key that a
--     concurrent transaction is writing is not visible here, and its set
--     is not either.
ALTER TABLE posting_sets VALIDATE CONSTRAINT ck_posting_sets_past;
ALTER TABLE postings VALIDATE CONSTRAINT ck_postings_past;
INSERT INTO posting_set_keys (id, idempotency_key, kind, competence, amount, charge_id, refund_id, reverses)
    SELECT id, idempotency_key, kind, competence, amount, charge_id, refund_id, reverses FROM posting_sets
    ON CONFLICT DO NOTHING;
