-- 0004: bearer tokens for the /v1 API. Only the SHA-256 digest of a token
-- is stored; the plaintext is shown once, when the token is created. A
-- token is never edited or deleted: its one change in life is revocation,
-- so the table stays an audit trail of who could do what, and when.

CREATE TABLE api_tokens (
    id         bigserial   PRIMARY KEY,
    name       text        NOT NULL,
    -- sha256(plaintext). A fast hash is enough: the plaintext carries 256
    -- random bits, so there is nothing to brute-force (see auth/auth.go).
    token_hash bytea       NOT NULL,
    -- read < write < admin: each scope implies those below it.
    scopes     text[]      NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    revoked_at timestamptz,
    CONSTRAINT uq_api_tokens_hash UNIQUE (token_hash),
    CONSTRAINT ck_api_tokens_hash CHECK (octet_length(token_hash) = 32),
    CONSTRAINT ck_api_tokens_name CHECK (length(name) BETWEEN 1 AND 100 AND name !~ '[[:cntrl:]]'),
    -- A non-empty, one-dimensional list of known scopes (a NULL element
    -- fails the containment test, so it is refused too).
    CONSTRAINT ck_api_tokens_scopes CHECK (
        array_ndims(scopes) = 1
        AND cardinality(scopes) BETWEEN 1 AND 3
        AND scopes <@ ARRAY['read', 'write', 'admin']::text[]),
    CONSTRAINT ck_api_tokens_revoked CHECK (revoked_at IS NULL OR revoked_at >= created_at)
);

-- The one UPDATE allowed sets revoked_at on a live token and touches
-- nothing else. Widening a token's scopes, swapping its hash, un-revoking
-- it or deleting it would rewrite history an auditor relies on; a new grant
-- is a new token.
CREATE FUNCTION api_tokens_revoke_only() RETURNS trigger
LANGUAGE plpgsql AS $$
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
$$;

CREATE TRIGGER trg_api_tokens_revoke_only BEFORE UPDATE OR DELETE ON api_tokens
    FOR EACH ROW EXECUTE FUNCTION api_tokens_revoke_only();
CREATE TRIGGER trg_api_tokens_no_truncate BEFORE TRUNCATE ON api_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION api_tokens_revoke_only();
ALTER TABLE api_tokens ENABLE ALWAYS TRIGGER trg_api_tokens_revoke_only;
ALTER TABLE api_tokens ENABLE ALWAYS TRIGGER trg_api_tokens_no_truncate;
