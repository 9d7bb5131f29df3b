-- +goose Up
-- Station identity is the external id byte for byte (no case folding): the unique key
-- external_upper becomes external_key holding the external id itself. Stations stored
-- before kept their first spelling in external_id, so the key is rebuilt from it.
ALTER TABLE stations RENAME COLUMN external_upper TO external_key;
UPDATE stations SET external_key = external_id WHERE external_key <> external_id;
