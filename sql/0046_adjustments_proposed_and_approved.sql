-- 0046: corrections made by two people. An adjustment (balanced legs on
-- accounts of the chart, with a reason) or the reversal of a posting set
-- is first a proposal, a row of adjustments; a second admin token of
-- another name approves it, and only then is its posting set booked, in
-- the approving transaction. A proposal may also be rejected, or expire
-- unapproved. With approval off (adjustments.approval: off) a proposal is
-- booked by the transaction that proposes it, by its proposer.
--
-- Package adjustments owns the table and every statement over it. Each
-- state change appends an outbox event in the same transaction: the four
-- topics below join ck_outbox_topic.
--
-- A proposal leaves 'proposed' once, to 'booked', 'rejected' or
-- 'expired' (the code's UPDATEs all say WHERE status = 'proposed', under
-- the row's lock). The checks hold what the database can see of one row:
-- a booked proposal names its set; a four-eyes proposal is never booked
-- by its proposer; an adjustment has its key and competence, a reversal
-- the set it reverses. At most one reversal per set is proposed or booked
-- at a time (uq_adjustments_reversal); posting_sets.reverses (0048) is
-- the ledger's own "at most once".
--
-- No foreign keys to posting_sets, charges, divergences or api_tokens:
-- those rows are never deleted (their triggers or code refuse it), and a
-- reference would make their TRUNCATE fail on it before their triggers
-- could refuse it (see 0026 on console_sessions).

CREATE TABLE adjustments (
    id                bigserial   PRIMARY KEY,
    kind              text        NOT NULL,
    status            text        NOT NULL DEFAULT 'proposed',
    idempotency_key   text,
    request_hash      text        NOT NULL,
    reason            text        NOT NULL,
    legs              jsonb       NOT NULL,
    amount            bigint      NOT NULL,
    currency          char(3)     NOT NULL,
    competence        date,
    charge_id         text,
    partner           text,
    divergence_id     bigint,
    reverses          bigint,
    four_eyes         boolean     NOT NULL,
    proposed_by       text        NOT NULL,
    proposed_by_token bigint,
    proposed_at       timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL,
    decided_by        text,
    decided_by_token  bigint,
    decided_at        timestamptz,
    decision_note     text,
    posting_set_id    bigint,
    CONSTRAINT ck_adjustments_kind CHECK (kind IN ('adjustment', 'reversal')),
    CONSTRAINT ck_adjustments_status CHECK (status IN ('proposed', 'booked', 'rejected', 'expired')),
    CONSTRAINT ck_adjustments_adjustment CHECK (kind <> 'adjustment' OR (idempotency_key IS NOT NULL AND competence IS NOT NULL AND reverses IS NULL)),
    CONSTRAINT ck_adjustments_reversal CHECK (kind <> 'reversal' OR (reverses IS NOT NULL AND idempotency_key IS NULL)),
    CONSTRAINT ck_adjustments_key CHECK (length(idempotency_key) BETWEEN 1 AND 200),
    CONSTRAINT ck_adjustments_reason CHECK (length(reason) BETWEEN 1 AND 1000),
    CONSTRAINT ck_adjustments_note CHECK (length(decision_note) <= 1000),
    CONSTRAINT ck_adjustments_names CHECK (length(proposed_by) BETWEEN 1 AND 100 AND length(decided_by) BETWEEN 1 AND 100),
    CONSTRAINT ck_adjustments_legs CHECK (jsonb_typeof(legs) = 'array' AND jsonb_array_length(legs) BETWEEN 2 AND 100),
    CONSTRAINT ck_adjustments_amount CHECK (amount > 0 AND amount <= 1000000000000000),
    CONSTRAINT ck_adjustments_booked CHECK ((status = 'booked') = (posting_set_id IS NOT NULL)),
    CONSTRAINT ck_adjustments_decided CHECK ((status = 'proposed') = (decided_at IS NULL)),
    CONSTRAINT ck_adjustments_decider CHECK (status NOT IN ('booked', 'rejected') OR decided_by IS NOT NULL),
    CONSTRAINT ck_adjustments_four_eyes CHECK (status <> 'booked' OR NOT four_eyes OR decided_by <> proposed_by),
    CONSTRAINT ck_adjustments_expiry CHECK (expires_at > proposed_at)
);
CREATE UNIQUE INDEX uq_adjustments_key ON adjustments (idempotency_key) WHERE kind = 'adjustment';
CREATE UNIQUE INDEX uq_adjustments_reversal ON adjustments (reverses) WHERE kind = 'reversal' AND status IN ('proposed', 'booked');
CREATE UNIQUE INDEX uq_adjustments_posting_set ON adjustments (posting_set_id) WHERE posting_set_id IS NOT NULL;
CREATE INDEX ix_adjustments_status_id ON adjustments (status, id);
CREATE INDEX ix_adjustments_due ON adjustments (expires_at) WHERE status = 'proposed';

ALTER TABLE outbox DROP CONSTRAINT ck_outbox_topic;
ALTER TABLE outbox ADD CONSTRAINT ck_outbox_topic CHECK (topic IN ('charge.paid', 'access.granted', 'charge.refunded',
    'charge.failed', 'divergence.opened', 'adjustment.proposed', 'adjustment.booked', 'adjustment.rejected', 'adjustment.expired'));
