-- 0008: a charge's posting sets are read by charge id (GET /v1/charges/{id},
-- refund lookups); the only charge_id indexes were partial per kind, so
-- those reads scanned the whole ledger.
CREATE INDEX ix_posting_sets_charge ON posting_sets (charge_id) WHERE charge_id IS NOT NULL;
