-- 0029: a refund known by two ids. A PSP's statement file may name a
-- refund by an id of its own where its webhook names it by another (Hodle:
-- the webhook's data.eventId; the CSV export, another id): the two are
-- the same refund when they are of the same charge, of the same amount
-- and close in time, and whichever comes second books nothing. The pair
-- is kept here, so that each booked refund is paired at most once (a
-- second refund of the same amount is then booked, not absorbed) and a
-- later statement line or redelivery under the other id is known at once.
CREATE TABLE refund_aliases (
    charge_id  text        NOT NULL,
    -- The id the refund is booked under (posting_sets.refund_id).
    refund_id  text        NOT NULL,
    -- The other side's id for the same refund.
    alias_id   text        NOT NULL,
    -- The delivery that found the pair.
    inbox_id   bigint,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (charge_id, alias_id),
    CONSTRAINT uq_refund_aliases_refund UNIQUE (charge_id, refund_id),
    CONSTRAINT ck_refund_aliases_other CHECK (alias_id <> refund_id)
);
