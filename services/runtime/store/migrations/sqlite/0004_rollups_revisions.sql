-- +goose Up
-- Hourly rollups and revisions (see the PostgreSQL migration).
CREATE TABLE rollups (
  station INTEGER NOT NULL,
  param   TEXT NOT NULL,
  hour    INTEGER NOT NULL,
  n       INTEGER NOT NULL,
  total   REAL NOT NULL,
  lo      REAL NOT NULL,
  hi      REAL NOT NULL,
  ssin    REAL NOT NULL,
  scos    REAL NOT NULL,
  PRIMARY KEY (station, param, hour)
) WITHOUT ROWID;

CREATE TABLE revisions (
  id               INTEGER PRIMARY KEY,
  station          INTEGER NOT NULL,
  ts               INTEGER NOT NULL,
  measurements     TEXT NOT NULL,
  source_format    TEXT NOT NULL,
  source           TEXT NOT NULL,
  fetched_ms       INTEGER NOT NULL,
  revised_ms       INTEGER NOT NULL,
  new_format       TEXT NOT NULL,
  new_source       TEXT NOT NULL
);
CREATE INDEX revisions_reading ON revisions (station, ts);

-- The source (file or URL) each ingest batch read, by its fetch time, so that a value
-- superseded later can say where it came from.
CREATE TABLE fetches (
  fetched_ms INTEGER NOT NULL,
  source     TEXT NOT NULL,
  PRIMARY KEY (fetched_ms, source)
);

CREATE TABLE store_jobs (name TEXT PRIMARY KEY);
INSERT INTO store_jobs (name) SELECT 'rebuild_rollups' WHERE EXISTS (SELECT 1 FROM readings);
