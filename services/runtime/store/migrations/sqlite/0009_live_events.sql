-- +goose Up
-- The in-process reading log (package live, docs/live.md) keeps its entries here too, so
-- a restarted service still has, for its retention, what it logged before: a client that
-- resumes with Last-Event-ID after the restart gets no gap. Positions are the log's
-- (ms, seq); the body is the entry as the log served it. Retention deletes by pos_ms.
CREATE TABLE live_events (
  pos_ms  bigint NOT NULL,
  pos_seq bigint NOT NULL,
  body    BLOB NOT NULL,
  PRIMARY KEY (pos_ms, pos_seq)
);
