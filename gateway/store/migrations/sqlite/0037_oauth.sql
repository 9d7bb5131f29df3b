-- +goose Up
-- OAuth 2.1 for MCP and REST (docs/security.md "OAuth"): keys gain scopes; each account's
-- connection to an OAuth client is a key of its own (client_id set), so its tokens are
-- rate-limited, counted and revoked as a key of the account. Registered clients, the
-- grant's codes and tokens (SHA-256 of their signatures only, never the token), and the
-- HMAC secret every replica signs tokens with.
ALTER TABLE api_keys ADD COLUMN scopes text NOT NULL DEFAULT '';
ALTER TABLE api_keys ADD COLUMN client_id text;
CREATE INDEX api_keys_client ON api_keys (owner_id, client_id) WHERE client_id IS NOT NULL;

CREATE TABLE oauth_clients (
    id                text PRIMARY KEY,
    name              text NOT NULL,
    redirect_uris     text NOT NULL,
    metadata_document boolean NOT NULL DEFAULT false,
    created_at        timestamp NOT NULL
);

CREATE TABLE oauth_tokens (
    signature  blob NOT NULL,
    kind       text NOT NULL CHECK (kind IN ('code', 'access', 'refresh', 'pkce')),
    request_id text NOT NULL,
    client_id  text NOT NULL,
    app_key_id text REFERENCES api_keys (id) ON DELETE CASCADE,
    data       text NOT NULL,
    active     boolean NOT NULL DEFAULT true,
    expires_at timestamp NOT NULL,
    created_at timestamp NOT NULL,
    PRIMARY KEY (kind, signature)
);
CREATE INDEX oauth_tokens_request ON oauth_tokens (request_id);
CREATE INDEX oauth_tokens_app ON oauth_tokens (app_key_id);
CREATE INDEX oauth_tokens_expiry ON oauth_tokens (expires_at);

CREATE TABLE oauth_secret (
    id     integer PRIMARY KEY CHECK (id = 1),
    secret blob NOT NULL
);

-- +goose Down
DROP TABLE oauth_secret;
DROP TABLE oauth_tokens;
DROP TABLE oauth_clients;
DROP INDEX api_keys_client;
ALTER TABLE api_keys DROP COLUMN client_id;
ALTER TABLE api_keys DROP COLUMN scopes;
