-- 0044: finding charges (GET /v1/charges) and reading a charge's timeline
-- (GET /v1/charges/{id}/timeline) from indexes, whatever the tables hold.
--
-- The listing is newest first, by (created_at, id) descending, a page at a
-- time. Each filter that narrows it has an index giving that order for its
-- value, so a page of a rare state or of one merchant is a probe and a
-- short walk, never a read of every charge: state, merchant and partner
-- lead an index on (x, created_at, id); a created range reads the order's
-- own index. A listing with a paid range is in the order of payments
-- (paid_at, id), which its index gives. An amount range is a range of
-- another column: its index finds the charges in range, sorted afterwards
-- (the planner walks the order's index instead when the range holds many).
-- The PSP's references already had theirs (charges_pkey for a Pix txid,
-- which is our charge id; uq_charges_psp_ref and ix_charges_paid_ref).
CREATE INDEX ix_charges_created ON charges (created_at, id);
CREATE INDEX ix_charges_state_created ON charges (state, created_at, id);
CREATE INDEX ix_charges_merchant_created ON charges (merchant, created_at, id) WHERE merchant IS NOT NULL;
CREATE INDEX ix_charges_partner_created ON charges (partner, created_at, id) WHERE partner IS NOT NULL;
CREATE INDEX ix_charges_paid_at ON charges (paid_at, id) WHERE paid_at IS NOT NULL;
CREATE INDEX ix_charges_amount ON charges (amount);

-- A delivery's own id (event_id): a bcb-pix credit's endToEndId, a Hodle
-- payment's trackId, a Standard Webhooks webhook-id. uq_inbox_event leads
-- with the endpoint, so an id alone read the whole inbox. A reference that
-- paid no charge (a second payment, a refund or failure delivered alone)
-- is known only here.
CREATE INDEX ix_inbox_event_id ON inbox (event_id);
-- The deliveries naming a charge (by our id or the PSP reference the app
-- registered): ix_inbox_parked holds the parked ones only.
CREATE INDEX ix_inbox_charge_ref ON inbox (charge_ref) WHERE charge_ref IS NOT NULL;

-- The rest of a charge's timeline, each by its charge in its own table.
CREATE INDEX ix_divergences_charge ON divergences (charge_id, id) WHERE charge_id IS NOT NULL;
CREATE INDEX ix_outbox_charge ON outbox (charge_id, id) WHERE charge_id IS NOT NULL;
CREATE INDEX ix_reconciliation_lines_charge ON reconciliation_lines (charge_id) WHERE charge_id IS NOT NULL;
