-- +goose Up
-- Rollups become one row per station and UTC hour (see the PostgreSQL migration). SQLite
-- has no binary writers for doubles in SQL, so the hours are summed again from the
-- readings at open (the rebuild_rollups job; SQLite holds `make run` and test data).
CREATE TABLE rollup_params (
  id   INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE
);
DROP TABLE rollups;
CREATE TABLE rollups (
  station INTEGER NOT NULL,
  hour    INTEGER NOT NULL,
  cells   BLOB NOT NULL,
  PRIMARY KEY (station, hour)
) WITHOUT ROWID;
INSERT OR IGNORE INTO store_jobs (name) SELECT 'rebuild_rollups' WHERE EXISTS (SELECT 1 FROM readings);
