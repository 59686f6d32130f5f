-- A statement file's lines are written decided (see reconcile/loadfile.go),
-- so the room 0023 left on each page for deciding them in place was half
-- of every page written: a million-line statement wrote twice the pages,
-- and twice the dirty buffers to evict, for updates most lines no longer
-- get. Pages are now filled. Updates still made in place are no longer
-- HOT (a new tuple and key entry each): a file run's booked and divergent
-- lines (inbox_id, divergence_id: a few in a hundred), and every line of
-- a bcb-pix run, whose pages of at most 1,000 items come over the
-- network. Existing pages keep their room until they are rewritten.
ALTER TABLE reconciliation_lines SET (fillfactor = 100);

-- The lines matching has still to decide (a bcb-pix run's pages, a file's
-- refunds): each step of matching finds them here instead of reading
-- every line of the run. A decided line has no entry.
CREATE INDEX ix_reconciliation_lines_undecided ON reconciliation_lines (run_id, line) WHERE outcome IS NULL;
