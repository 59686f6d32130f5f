-- 0006: announce outbox rows from outside the writing transaction.
-- A transaction that issues NOTIFY takes a database-wide lock from its
-- pre-commit until its end, so every transaction that wrote an outbox row
-- committed one after the other, WAL flush included, and could not share
-- a group commit. The writer now sends one coalesced NOTIFY after its
-- commit (events.Notifier); the outbox stays the durable source, and the
-- hub's poll catches an announcement lost to a crash.
DROP TRIGGER trg_outbox_notify ON outbox;
DROP FUNCTION outbox_notify();
