-- +goose Up
-- Stations of this service. skey is the compact key readings refer to.
CREATE TABLE stations (
  skey                 serial PRIMARY KEY,
  external_id          text NOT NULL,
  external_upper       text NOT NULL UNIQUE,
  provider             text NOT NULL,
  feed                 text NOT NULL,
  name                 text NOT NULL,
  description          text NOT NULL DEFAULT '',
  sensor_type          text NOT NULL DEFAULT '',
  status               text NOT NULL DEFAULT 'active',
  data_types           text NOT NULL DEFAULT '[]',
  deployment_date      text NOT NULL DEFAULT '',
  decommissioned_date  text,
  latitude             double precision,
  longitude            double precision,
  reporting_interval_s integer NOT NULL DEFAULT 0,
  last_reading_ms      bigint,
  updated_ms           bigint NOT NULL
);
CREATE INDEX stations_updated ON stations (updated_ms);

-- zstd raw-content dictionaries, one per source format and kind (raw:<fmt>, m:<fmt>).
CREATE TABLE dicts (
  id      serial PRIMARY KEY,
  name    text NOT NULL UNIQUE,
  content bytea NOT NULL
);

-- Readings, keyed (station, time in epoch milliseconds), partitioned by month of ts. The
-- reading id is UUIDv5(sensor, ts) and is derived, not stored.
CREATE TABLE readings (
  station      integer NOT NULL,
  ts           bigint NOT NULL,
  fetched_ms   bigint NOT NULL,
  lat          double precision,
  lon          double precision,
  measurements bytea NOT NULL,
  raw_format   integer,
  raw          bytea,
  PRIMARY KEY (station, ts)
) PARTITION BY RANGE (ts);
