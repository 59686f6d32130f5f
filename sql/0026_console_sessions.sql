-- 0026: sessions of the finance console. An API token is exchanged once,
-- at sign-in, for a session cookie; the cookie's plaintext is 256 random
-- bits and only its SHA-256 digest is stored (as for api_tokens: nothing
-- to brute-force, and the digest is the lookup key). A session carries
-- its token's rights: revoking the token ends the session at the next
-- request. Sign-out deletes the row; expired rows are deleted at sign-in.

CREATE TABLE console_sessions (
    session_hash bytea       PRIMARY KEY,
    -- api_tokens.id. No foreign key: tokens are never deleted (their
    -- trigger refuses it), and a reference would make TRUNCATE api_tokens
    -- fail on the reference before that trigger could refuse it.
    token_id     bigint      NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    expires_at   timestamptz NOT NULL,
    CONSTRAINT ck_console_sessions_hash CHECK (octet_length(session_hash) = 32),
    CONSTRAINT ck_console_sessions_expiry CHECK (expires_at > created_at)
);
CREATE INDEX ix_console_sessions_expires ON console_sessions (expires_at);
CREATE INDEX ix_console_sessions_token ON console_sessions (token_id);
