-- 0023: reconciliation of a PSP's statement against the ledger. A run
-- reconciles one window of one endpoint; its statement lines are loaded
-- (COPY) into reconciliation_lines and matched there with joins against
-- the inbox, the charges and the posting sets, and every line, and every
-- ledger fact of the window the statement lacks, ends in exactly one
-- outcome: matched, booked (stored into the inbox for the delivery path
-- to book) or divergence.
CREATE TABLE reconciliation_runs (
    id           bigserial   PRIMARY KEY,
    endpoint     text        NOT NULL,
    source       text        NOT NULL,
    window_from  timestamptz NOT NULL,
    window_to    timestamptz NOT NULL,
    -- A final window is past its delay: a payment the ledger has and the
    -- statement lacks is then a phantom, not a PSP that lists late.
    final        boolean     NOT NULL,
    -- Scheduled runs are claimed once per window across replicas (the
    -- unique index below); uploads and CLI runs are never claimed.
    scheduled    boolean     NOT NULL DEFAULT false,
    status       text        NOT NULL DEFAULT 'running',
    claimed_by   text        NOT NULL,
    -- A running run whose lease ran out belongs to a replica that died:
    -- another takes it over and continues from the pages kept.
    lease_until  timestamptz NOT NULL,
    attempts     integer     NOT NULL DEFAULT 1,
    pages        integer     NOT NULL DEFAULT 0,
    lines        bigint      NOT NULL DEFAULT 0,
    matched      bigint      NOT NULL DEFAULT 0,
    booked       bigint      NOT NULL DEFAULT 0,
    divergences  bigint      NOT NULL DEFAULT 0,
    -- Set once every page is fetched (bcb-pix) or the file is loaded.
    loaded       boolean     NOT NULL DEFAULT false,
    file_sha256  text,
    last_error   text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    finished_at  timestamptz,
    duration_ms  bigint,
    CONSTRAINT ck_reconciliation_runs_source CHECK (source IN ('bcb-pix', 'csv')),
    CONSTRAINT ck_reconciliation_runs_status CHECK (status IN ('running', 'succeeded', 'failed')),
    CONSTRAINT ck_reconciliation_runs_window CHECK (window_from < window_to),
    CONSTRAINT ck_reconciliation_runs_endpoint CHECK (length(endpoint) BETWEEN 1 AND 63)
);
CREATE UNIQUE INDEX uq_reconciliation_runs_window ON reconciliation_runs (endpoint, window_from, window_to, final)
    WHERE scheduled;
CREATE INDEX ix_reconciliation_runs_endpoint ON reconciliation_runs (endpoint, id);
CREATE INDEX ix_reconciliation_runs_unfinished ON reconciliation_runs (lease_until) WHERE status = 'running';

-- The pages of a bcb-pix statement as fetched, each with the lines it
-- loaded in the same transaction: a run that dies goes on from the next
-- page instead of asking the PSP again.
CREATE TABLE reconciliation_pages (
    run_id     bigint      NOT NULL REFERENCES reconciliation_runs (id) ON DELETE CASCADE,
    pass       integer     NOT NULL,
    page       integer     NOT NULL,
    total      bigint      NOT NULL,
    items      integer     NOT NULL,
    -- quantidadeDePaginas as this page stated it: where the pass ends.
    page_count integer     NOT NULL,
    body       bytea       NOT NULL,
    fetched_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (run_id, pass, page)
);

-- One row per statement line (side 'statement') and per ledger fact of
-- the window that no line matched (side 'ledger', a phantom).
CREATE TABLE reconciliation_lines (
    run_id        bigint      NOT NULL REFERENCES reconciliation_runs (id) ON DELETE CASCADE,
    line          bigint      NOT NULL,
    side          text        NOT NULL DEFAULT 'statement',
    -- paid, refunded (money went back), refund_open (a devolução that
    -- moved nothing: EM_PROCESSAMENTO, NAO_REALIZADO), invalid (a line
    -- that could not be read: a divergence with its cause).
    kind          text        NOT NULL,
    -- The inbox key the line is booked under: the webhook's own for
    -- bcb-pix, statement:paid / statement:refunded and the PSP id for CSV.
    event_type    text        NOT NULL DEFAULT '',
    event_id      text        NOT NULL DEFAULT '',
    psp_id        text        NOT NULL DEFAULT '',
    charge_ref    text        NOT NULL DEFAULT '',
    refund_id     text        NOT NULL DEFAULT '',
    amount        bigint      NOT NULL DEFAULT 0,
    fee           bigint,
    at            timestamptz,
    detail        text        NOT NULL DEFAULT '',
    outcome       text,
    reason        text,
    charge_id     text,
    ledger_amount bigint,
    ledger_fee    bigint,
    inbox_id      bigint,
    PRIMARY KEY (run_id, line),
    CONSTRAINT ck_reconciliation_lines_side CHECK (side IN ('statement', 'ledger')),
    CONSTRAINT ck_reconciliation_lines_kind CHECK (kind IN ('paid', 'refunded', 'refund_open', 'invalid')),
    CONSTRAINT ck_reconciliation_lines_outcome CHECK (outcome IN ('matched', 'booked', 'divergence'))
) WITH (fillfactor = 50);
-- No other index, and room on each page: matching sets every line's
-- outcome in place (a HOT update, no index entry written), which was two
-- thirds of its time with an index on the outcome and the charge.

-- Lookups the matching joins by: the payment a PSP id names (paid_ref),
-- and the ledger facts of a window (its sales and refunds by event time).
CREATE INDEX ix_charges_paid_ref ON charges (paid_ref) WHERE paid_ref IS NOT NULL;
CREATE INDEX ix_posting_sets_event_at ON posting_sets (event_at) WHERE kind IN ('sale', 'refund');
