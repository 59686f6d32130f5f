-- A bcb-pix statement page was kept whole (body, up to 16 MiB, even when
-- it listed nothing): nothing reads it back. A run resumes from its kept
-- pages' figures (reconcile/pages.go nextPage), and their items live on
-- as the run's lines, copied in the same transaction. What a page keeps
-- now is what the run needs of it and what proves what was received: its
-- paging figures, itensPorPagina among them (a pass whose pages were of
-- different sizes is not read as whole), and the length and SHA-256 of
-- the answer, to hold against the PSP's copy. A page is a row of fixed
-- size; what a run may receive over all its pages is bounded by the
-- reconciler.
--
-- A page kept before this keeps its digest and length; its size is
-- unknown (0), so that a pass read across this migration mixes sizes and
-- is read again rather than trusted.
ALTER TABLE reconciliation_pages
    ADD COLUMN page_size integer NOT NULL DEFAULT 0,
    ADD COLUMN bytes     integer,
    ADD COLUMN sha256    bytea;
UPDATE reconciliation_pages SET bytes = octet_length(body), sha256 = sha256(body);
ALTER TABLE reconciliation_pages
    DROP COLUMN body,
    ALTER COLUMN page_size DROP DEFAULT,
    ALTER COLUMN bytes SET NOT NULL,
    ALTER COLUMN sha256 SET NOT NULL,
    ADD CONSTRAINT ck_reconciliation_pages_figures CHECK (page_size >= 0 AND bytes >= 0 AND octet_length(sha256) = 32);
