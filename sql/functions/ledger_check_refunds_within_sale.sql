-- Invariant 3, checked at COMMIT: refunds of a charge never exceed its
-- sale. trg_refunds_within_sale (a CONSTRAINT TRIGGER AFTER INSERT on
-- posting_sets, DEFERRABLE INITIALLY DEFERRED, each row, WHEN (NEW.kind =
-- 'refund'), enabled ALWAYS).
--
-- Concurrent refunds of one charge are serialised by a row lock on the
-- charge's sale set (sql/0012), not by an advisory lock per charge (as in
-- sql/0001's balance check): any role that can connect may take, and
-- hold, an advisory lock. Locking a row needs
-- UPDATE rights, which the service role has on no ledger table, so the
-- function runs as its owner (SECURITY DEFINER, with the pinned
-- search_path), and no other role can take that lock at all. NO KEY
-- UPDATE does not conflict with the KEY SHARE lock a posting's foreign key
-- takes. sql/0012 revoked EXECUTE from PUBLIC: only the trigger calls it.
--
-- The sale and the refunds are read in posting_set_keys (sql/0056), which
-- holds each set's kind, charge and amount (ledger_keep_set_keys has
-- every set match its key): one index on one table, where posting_sets,
-- partitioned by month, would be read once a month. The row locked is
-- the sale's key, which no role but the owner may lock either.
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_check_refunds_within_sale()
 RETURNS trigger
 LANGUAGE plpgsql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
DECLARE
    sale_amount  numeric;
    refunded     numeric;
BEGIN
    SELECT amount::numeric INTO sale_amount FROM posting_set_keys
        WHERE kind = 'sale' AND charge_id = NEW.charge_id FOR NO KEY UPDATE;
    -- A new statement, so a new snapshot: it sees the refunds committed by
    -- whoever held the lock before us.
    SELECT coalesce(sum(amount::numeric), 0::numeric) INTO refunded FROM posting_set_keys
        WHERE kind = 'refund' AND charge_id = NEW.charge_id;
    IF sale_amount IS NULL OR refunded > sale_amount THEN
        RAISE EXCEPTION 'refunds of charge % total % above its sale %', NEW.charge_id, refunded, coalesce(sale_amount, 0::numeric)
            USING ERRCODE = 'check_violation', CONSTRAINT = 'trg_refunds_within_sale';
    END IF;
    RETURN NULL;
END;
$function$;
