-- +goose Up
CREATE TABLE stations (
  skey                 INTEGER PRIMARY KEY,
  external_id          TEXT NOT NULL,
  external_upper       TEXT NOT NULL UNIQUE,
  provider             TEXT NOT NULL,
  feed                 TEXT NOT NULL,
  name                 TEXT NOT NULL,
  description          TEXT NOT NULL DEFAULT '',
  sensor_type          TEXT NOT NULL DEFAULT '',
  status               TEXT NOT NULL DEFAULT 'active',
  data_types           TEXT NOT NULL DEFAULT '[]',
  deployment_date      TEXT NOT NULL DEFAULT '',
  decommissioned_date  TEXT,
  latitude             REAL,
  longitude            REAL,
  reporting_interval_s INTEGER NOT NULL DEFAULT 0,
  last_reading_ms      INTEGER,
  updated_ms           INTEGER NOT NULL
);
CREATE INDEX stations_updated ON stations (updated_ms);

CREATE TABLE dicts (
  id      INTEGER PRIMARY KEY,
  name    TEXT NOT NULL UNIQUE,
  content BLOB NOT NULL
);

CREATE TABLE readings (
  station      INTEGER NOT NULL,
  ts           INTEGER NOT NULL,
  fetched_ms   INTEGER NOT NULL,
  lat          REAL,
  lon          REAL,
  measurements BLOB NOT NULL,
  raw_format   INTEGER,
  raw          BLOB,
  PRIMARY KEY (station, ts)
) WITHOUT ROWID;
