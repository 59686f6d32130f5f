-- 0013: the inbox is unique on the parts of its key, and a delivery's body
-- is stored once, however many inbox rows its events make.
--
-- Keys. delivery_key joined endpoint, event type and event id with an
-- unescaped '|': the event type "DEPOSIT_ASSET_REFUNDED|rf" with id "77"
-- made the same key as the refund "DEPOSIT_ASSET_REFUNDED" with id
-- "rf|77", which was then answered "duplicate" and never booked. The
-- three parts already have their own columns, holding exactly what the key
-- joined, so uniqueness moves onto them: no existing row changes, two
-- existing rows cannot share the three parts (they would have shared a
-- key), and a redelivery of an old delivery still finds it. delivery_key
-- stays as the key shown to the PSP and operators, no longer unique; new
-- rows write it length-prefixed ("5:hodle22:DEPOSIT_ASSET_REFUNDED5:rf|77"),
-- which no '|'-joined key of an older row can equal (an endpoint name
-- holds no ':').
ALTER TABLE inbox ADD CONSTRAINT uq_inbox_event UNIQUE (endpoint, event_type, event_id);
ALTER TABLE inbox DROP CONSTRAINT uq_inbox_delivery_key;
COMMENT ON COLUMN inbox.delivery_key IS
    'the key as shown to the PSP; uniqueness is on (endpoint, event_type, event_id)';

-- Bodies. Every event of a bcb-pix callback (one per Pix and per
-- devolução) is its own inbox row, and each row kept the whole callback:
-- 1,000 items stored 111 MB. A delivery of several events now keeps its
-- body and audit headers once, in a row here written in the same
-- statement as its inbox rows, which refer to it by body_id. A delivery
-- of one event (all other schemes, and every row stored before this
-- migration) keeps them inline, as before: the common path writes what it
-- wrote. Readers take coalesce(inbox.body, inbox_bodies.body), and the
-- same for headers.
CREATE TABLE inbox_bodies (
    id          bigserial   PRIMARY KEY,
    body        bytea       NOT NULL,
    headers     jsonb       NOT NULL DEFAULT '{}',
    received_at timestamptz NOT NULL DEFAULT now()
);
ALTER TABLE inbox ADD COLUMN body_id bigint CONSTRAINT fk_inbox_body REFERENCES inbox_bodies (id);
ALTER TABLE inbox ALTER COLUMN body DROP NOT NULL;
ALTER TABLE inbox ADD CONSTRAINT ck_inbox_body CHECK ((body IS NULL) <> (body_id IS NULL));
