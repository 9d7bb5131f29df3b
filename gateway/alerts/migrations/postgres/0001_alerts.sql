-- +goose Up
-- Alert rules, their per-sensor state, the events they raise, the webhook outbox and its
-- delivery log (docs/alerts.md). Times are Unix milliseconds (UTC), the same in both
-- dialects.
CREATE TABLE alert_rules (
    id              TEXT PRIMARY KEY,
    key_id          TEXT NOT NULL,
    name            TEXT NOT NULL,
    target          TEXT NOT NULL,
    condition       TEXT NOT NULL,
    for_ms          BIGINT NOT NULL,
    webhook_url     TEXT NOT NULL DEFAULT '',
    webhook_secret  TEXT NOT NULL DEFAULT '',
    disabled_ms     BIGINT NOT NULL DEFAULT 0,
    created_ms      BIGINT NOT NULL,
    changed_ms      BIGINT NOT NULL,
    deleted_ms      BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX alert_rules_key ON alert_rules (key_id) WHERE deleted_ms = 0;

CREATE TABLE alert_state (
    rule_id    TEXT NOT NULL,
    sensor_id  TEXT NOT NULL,
    state      TEXT NOT NULL,
    since_ms   BIGINT NOT NULL,
    last_ms    BIGINT NOT NULL,
    PRIMARY KEY (rule_id, sensor_id)
);

CREATE TABLE alert_events (
    seq                BIGSERIAL PRIMARY KEY,
    id                 TEXT NOT NULL UNIQUE,
    rule_id            TEXT NOT NULL,
    key_id             TEXT NOT NULL,
    body               TEXT NOT NULL,
    created_ms         BIGINT NOT NULL
);
CREATE INDEX alert_events_key ON alert_events (key_id, seq);

CREATE TABLE alert_outbox (
    id               BIGSERIAL PRIMARY KEY,
    event_seq        BIGINT NOT NULL,
    rule_id          TEXT NOT NULL,
    attempts         INT NOT NULL DEFAULT 0,
    first_ms         BIGINT NOT NULL,
    next_ms          BIGINT NOT NULL
);
CREATE INDEX alert_outbox_next ON alert_outbox (next_ms);

CREATE TABLE alert_deliveries (
    id           BIGSERIAL PRIMARY KEY,
    rule_id      TEXT NOT NULL,
    event_id     TEXT NOT NULL,
    attempt      INT NOT NULL,
    at_ms        BIGINT NOT NULL,
    status       INT NOT NULL,
    error        TEXT NOT NULL DEFAULT '',
    duration_ms  BIGINT NOT NULL,
    outcome      TEXT NOT NULL
);
CREATE INDEX alert_deliveries_rule ON alert_deliveries (rule_id, id);

-- The position of each service's log the evaluation has consumed: advanced in the same
-- transaction as the state and events a reading caused, by compare-and-set, so each
-- reading is evaluated once across replicas.
CREATE TABLE alert_cursors (
    service  TEXT PRIMARY KEY,
    pos      TEXT NOT NULL
);

-- +goose Down
DROP TABLE alert_cursors;
DROP TABLE alert_deliveries;
DROP TABLE alert_outbox;
DROP TABLE alert_events;
DROP TABLE alert_state;
DROP TABLE alert_rules;
