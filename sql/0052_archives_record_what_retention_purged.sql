-- 0052: what is not the ledger has a retention: inbox bodies and headers
-- of applied deliveries, outbox events, statement pages and kept files,
-- reconciliation lines and webhook attempts are written to an archive
-- file (package archive) and only then purged. archives records each file
-- written, so that an operator or an auditor sees which months and kinds
-- went where, with the file's SHA-256 and its row count; a file on disk
-- that no row here names was never committed (a crash between writing it
-- and purging its rows) and holds nothing the database lacks.
--
-- The inbox keeps every row and its unique key (endpoint, event_type,
-- event_id), its event and its status: a redelivery is still a duplicate,
-- a redelivered payment still re-ensures its grant, and posting_sets and
-- divergences still name the delivery. Only its body and audit headers
-- go, and body_archive names the archive that holds them: a row has its
-- body inline, or shared in inbox_bodies, or archived, exactly one.
-- NOT VALID here and validated by 0053, so that the inbox's writes wait
-- only for this short transaction, not for a scan of the whole table.
CREATE TABLE archives (
    id          bigserial   PRIMARY KEY,
    kind        text        NOT NULL,
    month       date        NOT NULL,
    file_name   text        NOT NULL,
    sha256      text        NOT NULL,
    rows        bigint      NOT NULL,
    bytes       bigint      NOT NULL,
    archived_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ck_archives_kind CHECK (kind IN ('inbox_bodies', 'outbox', 'statements', 'reconciliation_lines', 'webhook_attempts')),
    CONSTRAINT ck_archives_month CHECK (month = date_trunc('month', month)::date),
    CONSTRAINT ck_archives_sha256 CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    CONSTRAINT ck_archives_figures CHECK (rows > 0 AND bytes > 0),
    CONSTRAINT uq_archives_file_name UNIQUE (file_name)
);
CREATE INDEX ix_archives_kind_month ON archives (kind, month, id);

ALTER TABLE inbox ADD COLUMN body_archive bigint CONSTRAINT fk_inbox_body_archive REFERENCES archives (id);
ALTER TABLE inbox DROP CONSTRAINT ck_inbox_body;
ALTER TABLE inbox ADD CONSTRAINT ck_inbox_body CHECK (CASE WHEN body_archive IS NULL THEN (body IS NULL) <> (body_id IS NULL)
    ELSE body IS NULL AND body_id IS NULL END) NOT VALID;
