-- +goose Up
-- Readings per station, kept by ingest, so the total of an unbounded readings page needs
-- no count over the station's rows.
ALTER TABLE stations ADD COLUMN reading_count bigint NOT NULL DEFAULT 0;
UPDATE stations s SET reading_count = c.n
  FROM (SELECT station, count(*) AS n FROM readings GROUP BY station) c
 WHERE s.skey = c.station;
