-- 0005: scheduled CSV exports. One row per (schedule slot, kind, dialect):
-- the unique key is what lets only one replica run each slot, and the row
-- is the history finance and operations read.
CREATE TABLE export_runs (
    id           bigserial   PRIMARY KEY,
    slot         timestamptz NOT NULL,
    kind         text        NOT NULL,
    dialect      text        NOT NULL,
    month        date        NOT NULL,
    status       text        NOT NULL DEFAULT 'running',
    attempts     integer     NOT NULL DEFAULT 1,
    claimed_by   text        NOT NULL,
    -- A running claim older than its lease belongs to a replica that died:
    -- another may take the run over.
    lease_until  timestamptz NOT NULL,
    file_name    text,
    sha256       text,
    rows         bigint,
    bytes        bigint,
    last_error   text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    CONSTRAINT uq_export_runs_slot UNIQUE (slot, kind, dialect),
    CONSTRAINT ck_export_runs_status CHECK (status IN ('running', 'succeeded', 'failed')),
    CONSTRAINT ck_export_runs_month CHECK (extract(day FROM month) = 1)
);
CREATE INDEX ix_export_runs_retry ON export_runs (slot) WHERE status <> 'succeeded';
