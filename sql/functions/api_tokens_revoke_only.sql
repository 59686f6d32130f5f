-- Guards api_tokens: trg_api_tokens_revoke_only (BEFORE UPDATE OR DELETE,
-- each row) and trg_api_tokens_no_truncate (BEFORE TRUNCATE), both
-- enabled ALWAYS.
--
-- The one UPDATE allowed sets revoked_at on a live token and touches
-- nothing else. Widening a token's scopes, swapping its hash, un-revoking
-- it or deleting it would rewrite history an auditor relies on; a new
-- grant is a new token (sql/0004).
--
-- search_path and row_security as every function here (README.md).
CREATE OR REPLACE FUNCTION api_tokens_revoke_only()
 RETURNS trigger
 LANGUAGE plpgsql
 SET search_path TO 'pg_catalog', 'public', 'pg_temp'
 SET row_security TO 'off'
AS $function$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        IF OLD.revoked_at IS NULL AND NEW.revoked_at IS NOT NULL
           AND (NEW.id, NEW.name, NEW.token_hash, NEW.scopes, NEW.created_at)
               IS NOT DISTINCT FROM (OLD.id, OLD.name, OLD.token_hash, OLD.scopes, OLD.created_at) THEN
            RETURN NEW;
        END IF;
    END IF;
    RAISE EXCEPTION 'api_tokens: % refused: a token can only be revoked, once', TG_OP
        USING ERRCODE = 'restrict_violation', CONSTRAINT = TG_NAME;
END;
$function$;
