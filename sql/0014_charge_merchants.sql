-- 0014: charges belong to a merchant, and a webhook endpoint acts only on
-- its own merchant's charges (a delivery through merchant B's endpoint
-- must not refund merchant A's charge).
--
-- The merchant is given at registration (POST /v1/charges "merchant"; the
-- only configured merchant by default). Existing rows stay NULL, meaning
-- "legacy: any endpoint may act on it", which is how they were treated
-- before this migration: the merchants live in the config file, not in the
-- database, so a migration cannot know whose a charge was. An operator
-- who knows can assign them (UPDATE charges SET merchant = ... WHERE
-- merchant IS NULL); every charge registered from now on carries one.
ALTER TABLE charges ADD COLUMN merchant text;
ALTER TABLE charges ADD CONSTRAINT ck_charges_merchant CHECK (merchant <> '');

-- A delivery through an endpoint of another merchant than the charge's.
ALTER TABLE divergences DROP CONSTRAINT ck_divergences_reason;
ALTER TABLE divergences ADD CONSTRAINT ck_divergences_reason CHECK (reason IN ('unknown_charge', 'amount_mismatch',
    'currency_mismatch', 'refund_exceeds_paid', 'refund_amount_missing', 'malformed', 'disputed', 'second_payment',
    'processing_failed', 'refund_of_other_payment', 'refund_amount_changed', 'refund_without_payment',
    'merchant_mismatch'));
