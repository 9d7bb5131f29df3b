-- +goose Up
-- Catalog schema of the gateway (PostgreSQL). Sensors carry their provider and feed names
-- denormalized so that the list query never joins; Sync keeps them in step. Ordered text
-- columns use the "C" collation: byte order, the same as SQLite's, whatever the server's
-- locale, and the cheapest comparisons for the (name, id) index.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE EXTENSION IF NOT EXISTS btree_gin;

CREATE TABLE catalog_state (
    id         integer PRIMARY KEY CHECK (id = 1),
    generation bigint NOT NULL
);
INSERT INTO catalog_state (id, generation) VALUES (1, 1);

CREATE TABLE users (
    id         uuid PRIMARY KEY,
    name       text NOT NULL,
    email      text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);
CREATE UNIQUE INDEX users_email_key ON users (lower(email)) WHERE email <> '';

CREATE TABLE providers (
    id          uuid PRIMARY KEY,
    slug        text NOT NULL UNIQUE,
    name        text NOT NULL,
    description text NOT NULL DEFAULT '',
    url         text NOT NULL DEFAULT '',
    license     text NOT NULL DEFAULT '',
    updated_at  timestamptz NOT NULL
);

CREATE TABLE services (
    id               text PRIMARY KEY,
    name             text NOT NULL DEFAULT '',
    description      text NOT NULL DEFAULT '',
    domain           text NOT NULL DEFAULT '',
    temporal_pattern text NOT NULL DEFAULT '',
    port             integer NOT NULL DEFAULT 0,
    status           text NOT NULL DEFAULT 'active',
    url              text NOT NULL DEFAULT '',
    version          text NOT NULL DEFAULT '',
    providers        text NOT NULL DEFAULT '[]', -- JSON array of slugs
    feeds            text NOT NULL DEFAULT '[]',
    tools            text NOT NULL DEFAULT '[]',
    sensor_count     integer NOT NULL DEFAULT 0,
    last_ingest_at   timestamptz,
    last_probe_at    timestamptz,
    last_sync_at     timestamptz
);

CREATE TABLE projects (
    id               uuid PRIMARY KEY,
    slug             text NOT NULL UNIQUE,
    name             text COLLATE "C" NOT NULL,
    description      text NOT NULL DEFAULT '',
    provider_id      uuid REFERENCES providers (id),
    domain           text NOT NULL DEFAULT '',
    temporal_pattern text NOT NULL DEFAULT '',
    feed_type        text NOT NULL DEFAULT '',
    service_id       text NOT NULL DEFAULT '',
    sensor_count     integer NOT NULL DEFAULT 0,
    owner_id         uuid NOT NULL REFERENCES users (id),
    visibility       text NOT NULL CHECK (visibility IN ('public', 'private')),
    search_text      text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX projects_name_id ON projects (name, id);
CREATE INDEX projects_owner ON projects (owner_id);
CREATE INDEX projects_service ON projects (service_id);

CREATE TABLE sensors (
    id                   uuid PRIMARY KEY,
    service_id           text COLLATE "C" NOT NULL,
    external_id          text NOT NULL,
    ext_key              text NOT NULL, -- upper(external_id): ids.Sensor compares case-insensitively
    name                 text COLLATE "C" NOT NULL,
    description          text NOT NULL DEFAULT '',
    sensor_type          text COLLATE "C" NOT NULL DEFAULT '',
    status               text COLLATE "C" NOT NULL DEFAULT 'active',
    data_types           text[] NOT NULL DEFAULT '{}',
    deployment_date      date,
    decommissioned_date  date,
    latitude             double precision,
    longitude            double precision,
    provider_id          uuid REFERENCES providers (id),
    provider_name        text NOT NULL DEFAULT '',
    provider_slug        text COLLATE "C" NOT NULL DEFAULT '',
    feed_id              uuid REFERENCES projects (id),
    feed_name            text NOT NULL DEFAULT '',
    feed_slug            text NOT NULL DEFAULT '',
    reporting_interval_s integer NOT NULL DEFAULT 0,
    last_reading_at      timestamptz,
    missing_since        timestamptz,
    updated_at           timestamptz NOT NULL,
    -- lower(name, description, external_id, provider_name) joined by U+001F, for search.
    search_text          text NOT NULL DEFAULT '',
    -- hash of everything Sync writes, so an unchanged sensor is detected without a diff.
    content_hash         text NOT NULL DEFAULT ''
);
CREATE INDEX sensors_name_id ON sensors (name, id);
CREATE INDEX sensors_service ON sensors (service_id);
CREATE INDEX sensors_ext_key ON sensors (ext_key, service_id);
CREATE INDEX sensors_type_name ON sensors (sensor_type, name, id);
CREATE INDEX sensors_status_name ON sensors (status, name, id);
CREATE INDEX sensors_provider_name ON sensors (provider_slug, name, id);
CREATE INDEX sensors_feed_name ON sensors (feed_id, name, id);
CREATE INDEX sensors_lat_lon ON sensors (latitude, longitude) WHERE latitude IS NOT NULL AND longitude IS NOT NULL;
CREATE INDEX sensors_data_types ON sensors USING gin (data_types);
CREATE INDEX sensors_search_trgm ON sensors USING gin (search_text gin_trgm_ops);

CREATE TABLE api_keys (
    id          uuid PRIMARY KEY,
    name        text NOT NULL DEFAULT '',
    prefix      text NOT NULL,
    hash        bytea NOT NULL UNIQUE,
    owner_id    uuid NOT NULL REFERENCES users (id),
    environment text NOT NULL CHECK (environment IN ('development', 'production')),
    plan        text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz
);
CREATE INDEX api_keys_prefix ON api_keys (prefix);
