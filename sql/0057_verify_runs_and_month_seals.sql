-- 0057: what razao verify verified. A full run re-reads the whole ledger,
-- which at 100 million postings is no longer a daily job; an incremental
-- run (razao verify -incremental) checks the sets one by one only from
-- the first month that was still open at the last clean run, and holds
-- every month closed before that to the seal a run recorded for it.
--
-- verify_runs: one row per run that could write (a standby's is not
-- recorded). snapshot is the repeatable-read snapshot the run read, and
-- last_closed the last closed month in it: the next incremental run
-- checks every set of the months after last_closed, which holds every set
-- that snapshot did not see (months never reopen and the database refuses
-- sets in a closed month; a set forged into one changes its seal). So the
-- horizon is a month, not a set id: ids are not commit order.
CREATE TABLE verify_runs (
    id            bigserial   PRIMARY KEY,
    mode          text        NOT NULL,
    started_at    timestamptz NOT NULL,
    finished_at   timestamptz NOT NULL DEFAULT now(),
    snapshot      pg_snapshot NOT NULL,
    last_closed   date,
    -- from_month is the first month whose sets the run checked one by
    -- one; NULL for a full run, which checked every set.
    from_month    date,
    sets_checked  bigint      NOT NULL,
    new_sets      bigint      NOT NULL,
    months_sealed integer     NOT NULL,
    breaches      bigint      NOT NULL,
    CONSTRAINT ck_verify_runs_mode CHECK (mode IN ('full', 'incremental')),
    CONSTRAINT ck_verify_runs_counts CHECK (sets_checked >= 0 AND new_sets >= 0 AND months_sealed >= 0 AND breaches >= 0)
);

-- The clean runs, newest first: where an incremental run starts.
CREATE INDEX ix_verify_runs_clean ON verify_runs (id DESC) WHERE breaches = 0;

-- verify_month_seals: a closed month's digest, taken by the first clean
-- run that saw the month closed (after checking its every set), over the
-- month's posting sets and postings, column by column. Every later run
-- recomputes it and reports a month whose digest differs: a set or
-- posting edited, added or removed after the month was verified.
CREATE TABLE verify_month_seals (
    month     date        PRIMARY KEY,
    sets      bigint      NOT NULL,
    postings  bigint      NOT NULL,
    digest    text        NOT NULL,
    run_id    bigint      NOT NULL REFERENCES verify_runs (id),
    sealed_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ck_verify_month_seals_first_day CHECK (month = date_trunc('month', month)::date)
);
