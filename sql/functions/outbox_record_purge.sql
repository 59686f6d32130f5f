-- Moves the outbox's purge watermark (outbox_purged_through, sql/0058)
-- forward over the events a statement deletes from the outbox:
-- trg_outbox_record_purge (AFTER DELETE, REFERENCING OLD TABLE AS purged,
-- FOR EACH STATEMENT) and trg_outbox_record_truncate (BEFORE TRUNCATE,
-- FOR EACH STATEMENT: the rows are still there to read), both enabled
-- ALWAYS. Retention (package archive) deletes events once archived; a
-- reader resuming from a cursor behind the watermark is refused (package
-- events) rather than silently passed over what went.
--
-- * Monotonic: the row takes the greater of its cursor and the highest
--   cursor deleted, in the readers' (xid, id) order, and of its
--   created_through and the latest created_at deleted. The UPDATE locks
--   the row, and at READ COMMITTED a concurrent purge's UPDATE re-reads it
--   once the first commits: whichever order they commit in, the row ends
--   at the greater of both, never back.
-- * In the deleting transaction: rolled back with it.
-- * SECURITY DEFINER: the service role may read the row, not write it;
--   EXECUTE is revoked from PUBLIC (sql/0058), so no role hangs it on a
--   table of its own to move the watermark.
-- * A missing row (someone deleted it as the owner) fails the delete: a
--   purge that cannot be recorded does not happen.
-- * Every comparison is between one type (see ledger_check_posting_set on
--   operators).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION outbox_record_purge()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    top_xid xid8;
    top_id bigint;
    newest timestamptz;
BEGIN
    IF TG_OP = 'TRUNCATE' THEN
        SELECT o.xid, o.id INTO top_xid, top_id FROM outbox o ORDER BY o.xid DESC, o.id DESC LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        SELECT max(o.created_at) INTO newest FROM outbox o;
    ELSE
        SELECT p.xid, p.id INTO top_xid, top_id FROM purged p ORDER BY p.xid DESC, p.id DESC LIMIT 1;
        IF NOT FOUND THEN
            RETURN NULL;
        END IF;
        SELECT max(p.created_at) INTO newest FROM purged p;
    END IF;
    UPDATE outbox_purged_through w SET
        xid = CASE WHEN (top_xid, top_id) > (w.xid, w.id) THEN top_xid ELSE w.xid END,
        id = CASE WHEN (top_xid, top_id) > (w.xid, w.id) THEN top_id ELSE w.id END,
        created_through = greatest(w.created_through, newest),
        purged_at = now()
    WHERE w.one;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'outbox_purged_through has no row: the outbox''s purge cannot be recorded'
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_outbox_record_purge';
    END IF;
    RETURN NULL;
END;
$function$;
