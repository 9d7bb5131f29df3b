-- +goose Up
ALTER TABLE stations ADD COLUMN reading_count INTEGER NOT NULL DEFAULT 0;
UPDATE stations SET reading_count = (SELECT count(*) FROM readings WHERE readings.station = stations.skey);
