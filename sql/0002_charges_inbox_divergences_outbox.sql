-- 0002: the webhook front. Charges the selling app registers, the inbox of
-- authentic deliveries (each stored once), divergences for finance, access
-- grants, and the outbox of events published after commit.

CREATE TABLE charges (
    id              text        PRIMARY KEY,
    -- The PSP's own reference for the payment (Hodle trackId...), when the
    -- app knows it: webhooks may find the charge by it.
    psp_ref         text,
    amount          bigint      NOT NULL,
    currency        char(3)     NOT NULL DEFAULT 'BRL',
    partner         text,
    commission_bp   integer     NOT NULL DEFAULT 0,
    access          text        NOT NULL DEFAULT '',
    metadata        jsonb       NOT NULL DEFAULT '{}',
    state           text        NOT NULL DEFAULT 'pending',
    paid_amount     bigint,
    fee             bigint,
    commission      bigint      NOT NULL DEFAULT 0,
    paid_at         timestamptz,
    -- The PSP's reference of the payment that paid this charge: a paid
    -- event with another reference is a second payment, not a redelivery.
    paid_ref        text,
    refunded_amount bigint      NOT NULL DEFAULT 0,
    failed_at       timestamptz,
    request_hash    text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ck_charges_id CHECK (id ~ '^[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}$'),
    CONSTRAINT ck_charges_amount CHECK (amount > 0),
    CONSTRAINT ck_charges_commission_bp CHECK (commission_bp BETWEEN 0 AND 10000),
    CONSTRAINT ck_charges_partner CHECK (partner IS NOT NULL OR commission_bp = 0),
    CONSTRAINT ck_charges_state CHECK (state IN ('pending', 'paid', 'partially_refunded', 'refunded', 'failed')),
    CONSTRAINT ck_charges_refunded CHECK (refunded_amount >= 0 AND refunded_amount <= coalesce(paid_amount, 0))
);
-- Every id a webhook looks a charge up by is indexed: the lock must be a
-- point lookup, never a scan that grows with the table.
CREATE UNIQUE INDEX uq_charges_psp_ref ON charges (psp_ref) WHERE psp_ref IS NOT NULL;

-- Not ledger data: a grant can be repaired (re-ensured) by a redelivery.
CREATE TABLE access_grants (
    charge_id  text        PRIMARY KEY REFERENCES charges (id),
    access     text        NOT NULL,
    granted_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE inbox (
    id              bigserial   PRIMARY KEY,
    -- endpoint | PSP event type | PSP stable event id
    delivery_key    text        NOT NULL,
    endpoint        text        NOT NULL,
    scheme          text        NOT NULL,
    merchant        text        NOT NULL,
    event_type      text        NOT NULL,
    event_id        text        NOT NULL,
    kind            text        NOT NULL,
    -- The charge id or PSP reference the event names, to find parked
    -- refunds when their payment lands.
    charge_ref      text,
    event           jsonb       NOT NULL,
    body            bytea       NOT NULL,
    headers         jsonb       NOT NULL DEFAULT '{}',
    status          text        NOT NULL DEFAULT 'pending',
    attempts        integer     NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    last_error      text,
    received_at     timestamptz NOT NULL DEFAULT now(),
    processed_at    timestamptz,
    CONSTRAINT uq_inbox_delivery_key UNIQUE (delivery_key),
    CONSTRAINT ck_inbox_kind CHECK (kind IN ('paid', 'refunded', 'failed', 'ignored', 'disputed', 'malformed')),
    CONSTRAINT ck_inbox_status CHECK (status IN ('pending', 'processed', 'parked', 'divergent', 'ignored'))
);
CREATE INDEX ix_inbox_due ON inbox (next_attempt_at) WHERE status = 'pending';
CREATE INDEX ix_inbox_parked ON inbox (charge_ref) WHERE status = 'parked';

CREATE TABLE divergences (
    id              bigserial   PRIMARY KEY,
    inbox_id        bigint      REFERENCES inbox (id),
    charge_id       text,
    reason          text        NOT NULL,
    detail          text        NOT NULL DEFAULT '',
    status          text        NOT NULL DEFAULT 'open',
    resolution_note text,
    resolved_at     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT uq_divergences_inbox UNIQUE (inbox_id),
    CONSTRAINT ck_divergences_reason CHECK (reason IN ('unknown_charge', 'amount_mismatch', 'currency_mismatch',
        'refund_exceeds_paid', 'refund_amount_missing', 'malformed', 'disputed', 'second_payment', 'processing_failed')),
    CONSTRAINT ck_divergences_status CHECK (status IN ('open', 'resolved'))
);
CREATE INDEX ix_divergences_open ON divergences (created_at) WHERE status = 'open';

-- Events for the selling app, written in the transaction that caused them
-- and announced by NOTIFY, which PostgreSQL delivers only at commit.
-- Readers page by (xid, id) below the oldest running transaction, so an
-- event is never skipped because an older transaction committed later.
CREATE TABLE outbox (
    id         bigserial   PRIMARY KEY,
    xid        xid8        NOT NULL DEFAULT pg_current_xact_id(),
    topic      text        NOT NULL,
    charge_id  text,
    payload    jsonb       NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ck_outbox_topic CHECK (topic IN ('charge.paid', 'access.granted', 'charge.refunded', 'charge.failed', 'divergence.opened'))
);
CREATE INDEX ix_outbox_cursor ON outbox (xid, id);

CREATE FUNCTION outbox_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('razao_outbox', '');
    RETURN NULL;
END;
$$;
CREATE TRIGGER trg_outbox_notify AFTER INSERT ON outbox
    FOR EACH STATEMENT EXECUTE FUNCTION outbox_notify();
