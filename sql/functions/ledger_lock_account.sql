-- Payouts to one partner are serialised by a row lock on the partner's
-- payable account, taken through this function (partners.Payout), since
-- sql/0012: the service role has no UPDATE right on accounts, so the lock
-- is taken as the owner (SECURITY DEFINER, with the pinned search_path),
-- and no other role may call it. sql/0012 revoked EXECUTE from PUBLIC;
-- docs/razao-role.sql grants it to the service role. NO KEY UPDATE does
-- not conflict with the KEY SHARE lock a foreign key to accounts takes.
--
-- LANGUAGE sql: its body is checked against accounts when it is created,
-- which the numbered migrations have done by then.
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION ledger_lock_account(account_code text)
 RETURNS bigint
 LANGUAGE sql
 SECURITY DEFINER
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
    SELECT id FROM accounts WHERE code = account_code FOR NO KEY UPDATE
$function$;
