-- 0038: the daily refund sweep of a bcb-pix endpoint. A devolução may
-- settle up to 90 days after its Pix, and GET /pix lists by the Pix's
-- horario, not the refund's: the windows the schedule reads find a late
-- refund only by chance. Once a day each scheduled endpoint reads the
-- refund horizon with devolucaoPresente=true (a sweep run), and books
-- or judges only the refunds it lists.
--
-- A sweep is a scheduled run (a failed one is retried, a dead one taken
-- over from its kept pages, as a window's), claimed once per endpoint and
-- day across replicas: by the day's end of the window alone, so that a
-- horizon changed in the config that day does not sweep it twice. The
-- windows' claim no longer takes sweeps in: a sweep whose bounds a
-- window's happened to share would otherwise keep that window from being
-- claimed, or the other way round.
ALTER TABLE reconciliation_runs ADD COLUMN sweep boolean NOT NULL DEFAULT false;
ALTER TABLE reconciliation_runs ADD CONSTRAINT ck_reconciliation_runs_sweep
    CHECK (NOT sweep OR (scheduled AND NOT final AND source = 'bcb-pix'));

DROP INDEX uq_reconciliation_runs_window;
CREATE UNIQUE INDEX uq_reconciliation_runs_window ON reconciliation_runs (endpoint, window_from, window_to, final)
    WHERE scheduled AND NOT sweep;
CREATE UNIQUE INDEX uq_reconciliation_runs_sweep ON reconciliation_runs (endpoint, window_to) WHERE sweep;
