-- +goose Up
-- Sensor identity is the external id byte for byte (ids.Sensor no longer upper-cases it):
-- ext_key now holds external_id itself, so OpenAQ's "21 de Mayo" and "21 de mayo" are two
-- sensors that a lookup by external id tells apart.
UPDATE sensors SET ext_key = external_id WHERE ext_key <> external_id;
