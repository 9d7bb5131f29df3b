-- +goose Up
-- Accounts (docs/accounts.md): the users who own keys become accounts that sign in to
-- /account, with a role; keys gain an expiry (the grace of a rotation) and the time they
-- were last used; the audit log, usage per key per hour, server-side sessions, passkeys,
-- OpenID Connect identities and one-time enrolment/sign-in tokens.
ALTER TABLE users ADD COLUMN role text NOT NULL DEFAULT 'user' CHECK (role IN ('user', 'admin'));
ALTER TABLE users ADD COLUMN disabled_at timestamptz;

ALTER TABLE api_keys ADD COLUMN expires_at timestamptz;
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
CREATE INDEX api_keys_owner ON api_keys (owner_id, created_at);

CREATE TABLE audit_events (
    id      bigserial PRIMARY KEY,
    at      timestamptz NOT NULL,
    actor   text NOT NULL,
    action  text NOT NULL,
    target  text NOT NULL DEFAULT '',
    address text NOT NULL DEFAULT ''
);

-- Requests per key per hour, copied from the shared Redis counters; kept 90 days.
CREATE TABLE key_usage (
    key_id   uuid NOT NULL REFERENCES api_keys (id) ON DELETE CASCADE,
    hour     timestamptz NOT NULL,
    requests bigint NOT NULL,
    PRIMARY KEY (key_id, hour)
);
CREATE INDEX key_usage_hour ON key_usage (hour);

-- The table github.com/alexedwards/scs/postgresstore reads and writes.
CREATE TABLE sessions (
    token  text PRIMARY KEY,
    data   bytea NOT NULL,
    expiry timestamptz NOT NULL
);
CREATE INDEX sessions_expiry_idx ON sessions (expiry);

-- Passkeys: the go-webauthn credential as JSON, found by its id at sign-in.
CREATE TABLE account_credentials (
    id           bytea PRIMARY KEY,
    account_id   uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    credential   text NOT NULL,
    created_at   timestamptz NOT NULL,
    last_used_at timestamptz
);
CREATE INDEX account_credentials_account ON account_credentials (account_id);

-- OpenID Connect identities: one (issuer, subject) names one account.
CREATE TABLE account_identities (
    issuer     text NOT NULL,
    subject    text NOT NULL,
    account_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (issuer, subject)
);

-- One-time links: enrol (a passkey for an existing account: create-admin, invitation) and
-- signin (the development account of make run). Only the SHA-256 of the token is stored.
CREATE TABLE account_tokens (
    hash       bytea PRIMARY KEY,
    kind       text NOT NULL CHECK (kind IN ('enrol', 'signin')),
    account_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL,
    used_at    timestamptz
);
