-- 0058: the outbox remembers how far retention purged it, so that a
-- reader resuming from a cursor behind a purge is told so (410 Gone on
-- GET /v1/events, package events) instead of silently resuming after the
-- gap, and a webhook replay of a time range that was purged is refused
-- (package outgoing).
--
-- outbox_purged_through is one row: (xid, id), the highest cursor, in the
-- readers' (xid, id) order, of any event ever deleted from the outbox, and
-- created_through, the latest created_at of any of them. What it promises:
--
--   * every event whose cursor is after (xid, id) is still in the outbox:
--     a reader at or after it misses nothing; a reader before it may have
--     missed events (which ones is in the archive files, kind outbox);
--   * every event created after created_through is still in the outbox.
--
-- It promises no more: a purge is not contiguous (retention keeps events
-- an endpoint has yet to deliver or a replay asked for, and created_at
-- does not follow the cursor's order), so events before the watermark
-- may still be there, and a reader before it is refused even where
-- nothing after its own cursor went.
--
-- The row moves only through trg_outbox_record_purge (after each DELETE
-- on the outbox, with the deleted rows as a transition table) and
-- trg_outbox_record_truncate (before a TRUNCATE), in the transaction that
-- deletes: it commits if and only if the purge does. Each move takes the
-- greater of the row's value and the purge's, under the row's lock: two
-- purges at once (retention runs under an advisory lock, but a second
-- replica's run, a hand-run `razao archive run` or an owner's DELETE need
-- not) each move it forward, never back, whichever commits first. The
-- function is SECURITY DEFINER and the service role may only read the
-- row: it cannot move the watermark except by deleting events.
-- First the lock the triggers below take anyway: a purge under way
-- commits before this goes on, and none starts until it commits.
LOCK TABLE outbox IN SHARE ROW EXCLUSIVE MODE;

CREATE TABLE outbox_purged_through (
    one             boolean     PRIMARY KEY DEFAULT true,
    xid             xid8        NOT NULL,
    id              bigint      NOT NULL,
    created_through timestamptz,
    purged_at       timestamptz,
    CONSTRAINT ck_outbox_purged_through_one CHECK (one)
);

-- A database whose retention purged events before this migration cannot
-- say which: the watermark starts at this transaction's id, which is
-- above every event purged then (each committed before the lock above,
-- and so before this transaction took its id), and at the latest time any
-- outbox archive was written.
-- Readers behind it are refused once, and resume from it. Otherwise
-- nothing was purged: (0, 0), before every cursor.
INSERT INTO outbox_purged_through (xid, id, created_through, purged_at)
SELECT CASE WHEN a.at IS NULL THEN '0'::xid8 ELSE pg_current_xact_id() END, 0, a.at, a.at
FROM (SELECT max(archived_at) AS at FROM archives WHERE kind = 'outbox') a;

CREATE TRIGGER trg_outbox_record_purge AFTER DELETE ON outbox
    REFERENCING OLD TABLE AS purged
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_record_purge();
CREATE TRIGGER trg_outbox_record_truncate BEFORE TRUNCATE ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_record_purge();
-- Whoever connects, in whatever replication role.
ALTER TABLE outbox ENABLE ALWAYS TRIGGER trg_outbox_record_purge;
ALTER TABLE outbox ENABLE ALWAYS TRIGGER trg_outbox_record_truncate;
-- No role may hang the function on a table of its own (a temporary table
-- with a transition table named purged) to move the watermark.
REVOKE ALL ON FUNCTION outbox_record_purge() FROM PUBLIC;
