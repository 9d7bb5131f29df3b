-- +goose Up
-- Secret rotation with overlap: the previous secret keeps signing until previous_until_ms.
ALTER TABLE alert_rules ADD COLUMN previous_secret TEXT NOT NULL DEFAULT '';
ALTER TABLE alert_rules ADD COLUMN previous_until_ms BIGINT NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE alert_rules DROP COLUMN previous_until_ms;
ALTER TABLE alert_rules DROP COLUMN previous_secret;
