-- 0051: razao sends webhooks too. A webhook endpoint (a subscription of
-- the selling app) is a URL, the topics it wants and a signing secret in
-- the Standard Webhooks format; package outgoing owns both tables below
-- and every statement over them (outgoing/sql.go).
--
-- Each endpoint walks the outbox on its own, in commit order, with its
-- own cursor (after_xid, after_id: the events package's (xid, id) order,
-- read through events.Since, which holds back what an open transaction
-- could still put behind it). The head event (the one after the cursor,
-- or the oldest replay asked for) is retried until the endpoint answers
-- 2xx; attempt, head_event_id and next_at are the head's state, so the next event waits
-- for it, as in order per endpoint demands. An endpoint failing the whole
-- schedule (about three days) is disabled, with the event
-- webhook_endpoint.disabled.
--
-- Replicas never deliver one endpoint at once: a replica takes an
-- endpoint's lease (lease_token, lease_until) in a short transaction and
-- writes its progress only while the token is still its own. A row lock
-- held across the HTTP call would do the same, but its transaction would
-- hold an xid for the call's duration, and the outbox's horizon waits for
-- every transaction of a role that may write the outbox: every event
-- stream would stall behind the slowest subscriber.
--
-- Secrets are sealed (AES-GCM under a key the database does not hold)
-- when razao is given a key; the first byte of the column says how.
CREATE TABLE webhook_endpoints (
    id              bigserial   PRIMARY KEY,
    url             text        NOT NULL,
    description     text        NOT NULL DEFAULT '',
    topics          text[]      NOT NULL,
    enabled         boolean     NOT NULL DEFAULT true,
    disabled_reason text,
    disabled_at     timestamptz,
    secret          bytea       NOT NULL,
    previous_secret bytea,
    previous_until  timestamptz,
    after_xid       xid8        NOT NULL,
    after_id        bigint      NOT NULL,
    attempt         integer     NOT NULL DEFAULT 0,
    head_event_id   bigint,
    next_at         timestamptz NOT NULL DEFAULT now(),
    failing_since   timestamptz,
    lease_token     text,
    lease_until     timestamptz,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    CONSTRAINT ck_webhook_endpoints_url CHECK (length(url) BETWEEN 1 AND 2000),
    CONSTRAINT ck_webhook_endpoints_description CHECK (length(description) <= 500),
    CONSTRAINT ck_webhook_endpoints_topics CHECK (cardinality(topics) <= 50),
    CONSTRAINT ck_webhook_endpoints_disabled CHECK (enabled = (disabled_at IS NULL) AND enabled = (disabled_reason IS NULL)),
    CONSTRAINT ck_webhook_endpoints_disabled_reason CHECK (disabled_reason IN ('operator', 'failing')),
    CONSTRAINT ck_webhook_endpoints_previous CHECK ((previous_secret IS NULL) = (previous_until IS NULL)),
    CONSTRAINT ck_webhook_endpoints_attempt CHECK (attempt >= 0)
);
-- The dispatcher's claim: enabled endpoints whose head is due.
CREATE INDEX ix_webhook_endpoints_due ON webhook_endpoints (next_at) WHERE enabled;

-- Replays asked for (one event or a time range), delivered ahead of the
-- endpoint's next new event, oldest event first, each until 2xx.
CREATE TABLE webhook_replays (
    endpoint_id bigint      NOT NULL REFERENCES webhook_endpoints ON DELETE CASCADE,
    event_id    bigint      NOT NULL,
    event_xid   xid8        NOT NULL,
    asked_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (endpoint_id, event_xid, event_id)
);

-- Every attempt made, for the operator and the app's developers, kept
-- for a bounded time (webhooks.attempts_retention), then deleted.
CREATE TABLE webhook_attempts (
    id          bigserial   PRIMARY KEY,
    endpoint_id bigint      NOT NULL REFERENCES webhook_endpoints ON DELETE CASCADE,
    event_id    bigint      NOT NULL,
    topic       text        NOT NULL,
    attempt     integer     NOT NULL,
    replay      boolean     NOT NULL,
    status      integer,
    error       text,
    latency_ms  integer     NOT NULL,
    response    text        NOT NULL DEFAULT '',
    next_at     timestamptz,
    at          timestamptz NOT NULL,
    CONSTRAINT ck_webhook_attempts_outcome CHECK ((status IS NULL) <> (error IS NULL)),
    CONSTRAINT ck_webhook_attempts_response CHECK (length(response) <= 4096 AND length(error) <= 1000)
);
CREATE INDEX ix_webhook_attempts_endpoint ON webhook_attempts (endpoint_id, id);
CREATE INDEX ix_webhook_attempts_at ON webhook_attempts (at);

ALTER TABLE outbox DROP CONSTRAINT ck_outbox_topic;
ALTER TABLE outbox ADD CONSTRAINT ck_outbox_topic CHECK (topic IN ('charge.paid', 'access.granted', 'charge.refunded',
    'charge.failed', 'divergence.opened', 'adjustment.proposed', 'adjustment.booked', 'adjustment.rejected', 'adjustment.expired',
    'webhook_endpoint.disabled'));
