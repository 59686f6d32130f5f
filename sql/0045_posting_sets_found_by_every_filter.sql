-- 0045: every filter of GET /v1/posting-sets (postings.Find) reads an
-- index, and reads it in the listing's order (newest set first, by id),
-- so that a first page of 100 stops after about 100 index entries whatever
-- the ledger holds:
--   partner      (partner, id), which replaces (partner) of 0001: it
--                serves every read that one did;
--   kind         (kind, id): an adjustment among millions of sales;
--   amount       (amount, id);
--   competence   (competence, id) for the days at a range's edges; the
--                whole months between are ix_posting_sets_competence_month
--                (competence_month, id) of 0001;
--   effective    the event time's UTC month and UTC day, each with id,
--                as the competence's, and with the event time itself: a
--                scan of an expression's index reads the index alone only
--                when the columns under the expression are in it, and the
--                range's first and last day, cut at a time of day, are
--                tested there; and (event_at, id), for a window of hours
--                within a day, and the ledger's first and last event;
--   account      postings (account_id, posting_set_id): each account's
--                newest sets, for every account of the code's subtree.
-- The charge is ix_posting_sets_charge of 0008 (a charge has a handful of
-- sets).
--
-- Built in the migration's transaction, as 0023's and 0043's were: writes
-- to posting_sets and postings wait while each index is built, one read of
-- the table each. On a ledger of 10 million postings in 3.8 million sets
-- that is a minute or more, not seconds: apply it in a quiet hour, or build the
-- same indexes first with CREATE INDEX CONCURRENTLY under these names
-- (IF NOT EXISTS below then finds them and skips the build).
CREATE INDEX IF NOT EXISTS ix_posting_sets_partner_id ON posting_sets (partner, id) WHERE partner IS NOT NULL;
DROP INDEX ix_posting_sets_partner;
CREATE INDEX IF NOT EXISTS ix_posting_sets_kind_id ON posting_sets (kind, id);
CREATE INDEX IF NOT EXISTS ix_posting_sets_amount_id ON posting_sets (amount, id);
CREATE INDEX IF NOT EXISTS ix_posting_sets_competence_id ON posting_sets (competence, id);
CREATE INDEX IF NOT EXISTS ix_posting_sets_event_day ON posting_sets (((event_at AT TIME ZONE 'UTC')::date), id) INCLUDE (event_at);
CREATE INDEX IF NOT EXISTS ix_posting_sets_event_month ON posting_sets ((date_trunc('month', event_at AT TIME ZONE 'UTC')), id) INCLUDE (event_at);
CREATE INDEX IF NOT EXISTS ix_posting_sets_event_id ON posting_sets (event_at, id);
CREATE INDEX IF NOT EXISTS ix_postings_account_set ON postings (account_id, posting_set_id);
