-- +goose Up
-- Hourly rollups: per station, canonical parameter and UTC hour (epoch ms of its start),
-- the count, sum, minimum and maximum of the values, and the sums of their sines and
-- cosines (for the circular mean of directions). Ingest keeps them (docs/services.md
-- "Aggregates"): a new reading adds to its hour, a revised reading has its hour recomputed
-- from the stored readings. Aggregates whose buckets are whole UTC hours are answered
-- from here, so a year of hourly buckets over 10-minute data reads 8760 rows a parameter.
CREATE TABLE rollups (
  station integer NOT NULL,
  param   text NOT NULL,
  hour    bigint NOT NULL,
  n       integer NOT NULL,
  total   double precision NOT NULL,
  lo      double precision NOT NULL,
  hi      double precision NOT NULL,
  ssin    double precision NOT NULL,
  scos    double precision NOT NULL,
  PRIMARY KEY (station, param, hour)
);

-- Revisions: the earlier values of a reading that a better source superseded (an NDBC
-- quality-controlled historical file over the realtime file), with where each came from
-- and when it was replaced. The readings row always holds the current value.
CREATE TABLE revisions (
  id               bigserial PRIMARY KEY,
  station          integer NOT NULL,
  ts               bigint NOT NULL,
  measurements     text NOT NULL,
  source_format    text NOT NULL,
  source           text NOT NULL,
  fetched_ms       bigint NOT NULL,
  revised_ms       bigint NOT NULL,
  new_format       text NOT NULL,
  new_source       text NOT NULL
);
CREATE INDEX revisions_reading ON revisions (station, ts);

-- One-time jobs the store runs at open: the rollups of readings stored before this
-- migration are computed from them (their values are compressed, out of SQL's reach).
-- The source (file or URL) each ingest batch read, by its fetch time, so that a value
-- superseded later can say where it came from.
CREATE TABLE fetches (
  fetched_ms bigint NOT NULL,
  source     text NOT NULL,
  PRIMARY KEY (fetched_ms, source)
);

CREATE TABLE store_jobs (name text PRIMARY KEY);
INSERT INTO store_jobs (name) SELECT 'rebuild_rollups' WHERE EXISTS (SELECT 1 FROM readings);
