-- 0011: a month's close records the transaction that closed it. created_at
-- of a posting set is its transaction's start, not its commit, so it cannot
-- tell a set committed after the close from one committed before; xids can:
-- a set booked into a month correctly took its share of the close lock
-- before the close took it exclusively, so its transaction's xid is older
-- than the close's. razao verify reports any set of a closed month whose
-- xid is newer. Months closed before this migration keep a NULL here; their
-- snapshot's created_xid (written in the closing transaction) stands in.
ALTER TABLE closed_periods ADD COLUMN closed_xid xid8 DEFAULT pg_current_xact_id();
