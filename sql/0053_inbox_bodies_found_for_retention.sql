-- 0053: the checks and indexes retention reads (package archive).
--
-- ck_inbox_body of 0052 is validated here, outside 0052's transaction:
-- VALIDATE takes a lock that lets the inbox's writes go on while it reads
-- the table.
--
-- ix_inbox_archivable finds the applied deliveries whose body is still
-- kept, oldest processed first: the archive's pick reads a batch's worth
-- of index entries, however long the inbox. ix_inbox_body_id serves the
-- purge of shared bodies (an inbox_bodies row goes when no inbox row
-- refers to it any more) and fk_inbox_body's check of each delete; without
-- it each deleted body would read the whole inbox. Both built in the
-- migration's transaction, as 0045's were: on an inbox of 100 million rows
-- build them first with CREATE INDEX CONCURRENTLY under these names in a
-- quiet hour (IF NOT EXISTS then skips the build).
ALTER TABLE inbox VALIDATE CONSTRAINT ck_inbox_body;
CREATE INDEX IF NOT EXISTS ix_inbox_archivable ON inbox (processed_at, id)
    WHERE body_archive IS NULL AND status IN ('processed', 'ignored');
CREATE INDEX IF NOT EXISTS ix_inbox_body_id ON inbox (body_id) WHERE body_id IS NOT NULL;
