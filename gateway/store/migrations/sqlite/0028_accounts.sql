-- +goose Up
-- Accounts (docs/accounts.md): the PostgreSQL migration of the same number, in SQLite's
-- types.
ALTER TABLE users ADD COLUMN role text NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin'));
ALTER TABLE users ADD COLUMN disabled_at timestamp;

ALTER TABLE api_keys ADD COLUMN expires_at timestamp;
ALTER TABLE api_keys ADD COLUMN last_used_at timestamp;
CREATE INDEX api_keys_owner ON api_keys (owner_id, created_at);

CREATE TABLE audit_events (
    id      integer PRIMARY KEY AUTOINCREMENT,
    at      timestamp NOT NULL,
    actor   text NOT NULL,
    action  text NOT NULL,
    target  text NOT NULL DEFAULT '',
    address text NOT NULL DEFAULT ''
);

CREATE TABLE key_usage (
    key_id   text NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    hour     timestamp NOT NULL,
    requests integer NOT NULL,
    PRIMARY KEY (key_id, hour)
);
CREATE INDEX key_usage_hour ON key_usage (hour);

CREATE TABLE sessions (
    token  text PRIMARY KEY,
    data   blob NOT NULL,
    expiry timestamp NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

CREATE TABLE account_credentials (
    id           blob PRIMARY KEY,
    account_id   text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential   text NOT NULL,
    created_at   timestamp NOT NULL,
    last_used_at timestamp
);
CREATE INDEX account_credentials_account ON account_credentials (account_id);

CREATE TABLE account_identities (
    issuer     text NOT NULL,
    subject    text NOT NULL,
    account_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamp NOT NULL,
    PRIMARY KEY (issuer, subject)
);

CREATE TABLE account_tokens (
    hash       blob PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('enrol', 'signin')),
    account_id text NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamp NOT NULL,
    expires_at timestamp NOT NULL,
    used_at    timestamp
);
