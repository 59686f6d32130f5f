-- A run's paging finds its next page from its last kept page and
-- whether the statement moved during that page's pass: whether any page
-- of the pass stated another total or page count than the last (see
-- reconcile/pages.go nextPage). Read by comparing with every page of the
-- pass, that was a scan of the pass for every page fetched: quadratic in
-- pages for a long window. With the pass's pages indexed by their
-- figures, it is four probes: the least and the greatest total of the
-- pass, and the least and the greatest page count under the last's total.
CREATE INDEX ix_reconciliation_pages_totals ON reconciliation_pages (run_id, pass, total, page_count);
