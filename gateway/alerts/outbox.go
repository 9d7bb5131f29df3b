package alerts

import (
	"context"
	"fmt"
	"time"

	"gorm.io/gorm"
)

// job is one claimed outbox row with what its delivery needs.
type job struct {
	id, eventSeq int64
	ruleID       string
	attempts     int
	firstMS      int64
	eventID, url string
	secret       string
	// previous signs too until previousUntil (a rotation's overlap).
	previous      string
	previousUntil time.Time
	body          []byte
}

// attemptResult is one delivery attempt to record.
type attemptResult struct {
	job
	at      time.Time
	status  int
	err     string
	took    time.Duration
	outcome string
	next    time.Time
}

// claim takes up to n due outbox rows for this sender and hides them from others for
// lease. On PostgreSQL FOR UPDATE SKIP LOCKED lets every replica claim at once without
// waiting for or taking each other's rows; SQLite has one connection, so the statement is
// already alone.
func (s *Store) claim(ctx context.Context, n int, now time.Time, lease time.Duration) ([]job, error) {
	q := `UPDATE alert_outbox SET next_ms = ? WHERE id IN (
  SELECT id FROM alert_outbox WHERE next_ms <= ? ORDER BY next_ms LIMIT ?` + map[bool]string{true: " FOR UPDATE SKIP LOCKED", false: ""}[s.postgres] + `)
RETURNING id, event_seq, rule_id, attempts, first_ms`
	var rows []struct {
		ID, EventSeq int64
		RuleID       string
		Attempts     int
		FirstMS      int64
	}
	db := s.db.WithContext(ctx)
	if err := db.Raw(q, now.Add(lease).UnixMilli(), now.UnixMilli(), n).Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("alerts: claim outbox: %w", err)
	}
	out := make([]job, 0, len(rows))
	for _, r := range rows {
		var ev []struct {
			ID, Body string
		}
		if err := db.Raw("SELECT id, body FROM alert_events WHERE seq = ?", r.EventSeq).Scan(&ev).Error; err != nil {
			return nil, fmt.Errorf("alerts: outbox event: %w", err)
		}
		var rule []struct {
			WebhookURL, WebhookSecret, PreviousSecret string
			DisabledMS, DeletedMS, PreviousUntilMS    int64
		}
		if err := db.Raw("SELECT webhook_url, webhook_secret, previous_secret, previous_until_ms, disabled_ms, deleted_ms FROM alert_rules WHERE id = ?", r.RuleID).Scan(&rule).Error; err != nil {
			return nil, fmt.Errorf("alerts: outbox rule: %w", err)
		}
		if len(ev) == 0 || len(rule) == 0 || rule[0].WebhookURL == "" || rule[0].DisabledMS > 0 || rule[0].DeletedMS > 0 {
			// Nothing to deliver to any more.
			if err := db.Exec("DELETE FROM alert_outbox WHERE id = ?", r.ID).Error; err != nil {
				return nil, fmt.Errorf("alerts: outbox: %w", err)
			}
			continue
		}
		out = append(out, job{id: r.ID, eventSeq: r.EventSeq, ruleID: r.RuleID, attempts: r.Attempts, firstMS: r.FirstMS,
			eventID: ev[0].ID, body: []byte(ev[0].Body), url: rule[0].WebhookURL, secret: rule[0].WebhookSecret,
			previous: rule[0].PreviousSecret, previousUntil: time.UnixMilli(rule[0].PreviousUntilMS)})
	}
	return out, nil
}

// record logs an attempt and settles its outbox row: gone when delivered or given up,
// rescheduled for a retry, and every row of the rule gone (and the webhook disabled) on
// 410 Gone.
func (s *Store) record(ctx context.Context, d attemptResult) error {
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("INSERT INTO alert_deliveries (rule_id, event_id, attempt, at_ms, status, error, duration_ms, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
			d.ruleID, d.eventID, d.attempts+1, d.at.UnixMilli(), d.status, d.err, d.took.Milliseconds(), d.outcome).Error; err != nil {
			return err
		}
		switch d.outcome {
		case "retry":
			return tx.Exec("UPDATE alert_outbox SET attempts = attempts + 1, next_ms = ? WHERE id = ?", d.next.UnixMilli(), d.id).Error
		case "disabled":
			now := d.at.UnixMilli()
			if err := tx.Exec("UPDATE alert_rules SET disabled_ms = ?, changed_ms = ? WHERE id = ?", now, now, d.ruleID).Error; err != nil {
				return err
			}
			return tx.Exec("DELETE FROM alert_outbox WHERE rule_id = ?", d.ruleID).Error
		default:
			return tx.Exec("DELETE FROM alert_outbox WHERE id = ?", d.id).Error
		}
	})
}
