-- 0020: the inbox is the queue. Every delivery is stored due at once and
-- the workers claim due rows through ix_inbox_due, in its order (see
-- webhook.Processor): each claim reads a batch's worth of index entries,
-- as long as the index holds few dead ones. Every delivery updates its
-- row twice (stored pending, then processed), so the inbox is vacuumed
-- after about a thousand changed rows rather than a fifth of the table:
-- on a table of millions of rows the default leaves the due index full of
-- entries for rows long processed, and each claim walks them.
ALTER TABLE inbox SET (
    autovacuum_vacuum_scale_factor = 0,
    autovacuum_vacuum_threshold = 1000,
    autovacuum_vacuum_insert_scale_factor = 0,
    autovacuum_vacuum_insert_threshold = 5000,
    autovacuum_analyze_scale_factor = 0.02
);
