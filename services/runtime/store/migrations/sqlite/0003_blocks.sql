-- +goose Up
-- Blocks: consecutive readings of one station, source format and month, whose
-- measurements (and, separately, raw fragments) are packed and compressed together (see
-- the PostgreSQL migration: a reading in a block holds only a reference to it in its
-- measurements column). Readings stored before keep their inline values.
CREATE TABLE blocks (
  id           INTEGER PRIMARY KEY,
  station      INTEGER NOT NULL,
  ts           INTEGER NOT NULL,
  ts_last      INTEGER NOT NULL,
  measurements BLOB NOT NULL,
  raw_format   INTEGER,
  raw          BLOB
);
CREATE INDEX blocks_ts_last ON blocks (ts_last);
