-- API tokens (`topicd token create`): a public key naming the row, the SHA-256 of the
-- secret (never the secret itself), a role, and when it was revoked. Revoked rows are
-- kept so `topicd token list` still names who had access, and a key is never reused.
-- Jobs remember the token that submitted them, so queued jobs can be bounded per token.

CREATE TABLE api_tokens (
    key         TEXT PRIMARY KEY,
    name        TEXT NOT NULL,
    role        TEXT NOT NULL CHECK (role IN ('read', 'write', 'admin')),
    secret_hash BLOB NOT NULL CHECK (length(secret_hash) = 32),
    created_at  TEXT NOT NULL,
    revoked_at  TEXT
);

-- One live token per name, so `revoke --name` means one thing.
CREATE UNIQUE INDEX api_tokens_live_name ON api_tokens (name) WHERE revoked_at IS NULL;

ALTER TABLE jobs ADD COLUMN token_key TEXT;
