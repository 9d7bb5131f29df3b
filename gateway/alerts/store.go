package alerts

import (
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"gorm.io/gorm"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/migrate"
)

//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrationFiles embed.FS

// The alert tables have their own goose version table and advisory lock ("sgalerts"), so
// they migrate apart from the catalog's tables in the same database.
const (
	migrationTable   = "alerts_goose_version"
	migrationLockKey = int64(0x7367616c65727473)
)

// Store keeps rules, state, events, the outbox and the delivery log in the gateway's
// catalog database (PostgreSQL, or SQLite for the laptop mode).
type Store struct {
	db       *gorm.DB
	postgres bool
	now      func() time.Time
}

// NewStore returns the store on db (the catalog's connection pool, gateway/store.Store.DB)
// after applying the alert migrations it has not seen.
func NewStore(ctx context.Context, db *gorm.DB, postgres bool, log *slog.Logger) (*Store, error) {
	dir, dialect := "migrations/sqlite", migrate.SQLite
	if postgres {
		dir, dialect = "migrations/postgres", migrate.Postgres
	}
	files, err := fs.Sub(migrationFiles, dir)
	if err != nil {
		return nil, fmt.Errorf("alerts: embedded migrations: %w", err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("alerts: %w", err)
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if _, err := migrate.Up(ctx, sqlDB, migrate.Config{Dialect: dialect, Files: files, Table: migrationTable,
		LockID: migrationLockKey, Logger: log}); err != nil {
		return nil, fmt.Errorf("alerts: migrate: %w", err)
	}
	return &Store{db: db, postgres: postgres, now: time.Now}, nil
}

// errStore is the client's view of a database failure.
func errStore(err error) error {
	return fmt.Errorf("%w: %w", apierr.New(apierr.StoreUnavailable, "the alert store is unavailable; retry shortly"), err)
}

var errNoRule = apierr.New(apierr.NotFound, "no alert rule with this id for this key")

type ruleRow struct {
	ID, KeyID, Name, Target, Condition string
	ForMS                              int64
	WebhookURL, WebhookSecret          string
	DisabledMS, CreatedMS              int64
}

const ruleCols = "id, key_id, name, target, condition, for_ms, webhook_url, webhook_secret, disabled_ms, created_ms"

func (r ruleRow) rule() (Rule, error) {
	out := Rule{ID: r.ID, Name: r.Name, WebhookURL: r.WebhookURL, CreatedAt: time.UnixMilli(r.CreatedMS).UTC(),
		keyID: r.KeyID, forDur: time.Duration(r.ForMS) * time.Millisecond, secret: r.WebhookSecret}
	out.For = isoDuration(out.forDur)
	if r.DisabledMS > 0 {
		t := time.UnixMilli(r.DisabledMS).UTC()
		out.WebhookDisabled = &t
	}
	if err := json.Unmarshal([]byte(r.Target), &out.Target); err != nil {
		return Rule{}, fmt.Errorf("alerts: rule %s target: %w", r.ID, err)
	}
	if err := json.Unmarshal([]byte(r.Condition), &out.Condition); err != nil {
		return Rule{}, fmt.Errorf("alerts: rule %s condition: %w", r.ID, err)
	}
	return out, nil
}

// isoDuration writes d as PT...S (whole seconds and a fraction when there is one).
func isoDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("PT%dS", int64(d/time.Second))
	}
	return fmt.Sprintf("PT%gS", d.Seconds())
}

// NewSecret makes a Standard Webhooks secret: whsec_ and 32 random bytes in base64.
func NewSecret() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("alerts: secret: %w", err)
	}
	return "whsec_" + base64.StdEncoding.EncodeToString(b), nil
}

// CreateRule stores r for keyID unless the key already holds quota rules (403 then), and
// returns it with its id and, when it has a webhook, its secret (shown once).
func (s *Store) CreateRule(ctx context.Context, keyID string, r Rule, quota int) (Rule, string, error) {
	target, err := toJSON(r.Target)
	if err != nil {
		return Rule{}, "", err
	}
	cond, err := toJSON(r.Condition)
	if err != nil {
		return Rule{}, "", err
	}
	secret := ""
	if r.WebhookURL != "" {
		if secret, err = NewSecret(); err != nil {
			return Rule{}, "", err
		}
	}
	now := s.now().UnixMilli()
	r.ID, r.keyID, r.secret = uuid.NewString(), keyID, secret
	r.CreatedAt = time.UnixMilli(now).UTC()
	r.For = isoDuration(r.forDur)
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if s.postgres {
			// Serialise the quota check per key: two creates at once cannot both pass it.
			if err := tx.Exec("SELECT pg_advisory_xact_lock(hashtext(?))", "alerts:"+keyID).Error; err != nil {
				return err
			}
		}
		var n int64
		if err := tx.Raw("SELECT count(*) FROM alert_rules WHERE key_id = ? AND deleted_ms = 0", keyID).Scan(&n).Error; err != nil {
			return err
		}
		if n >= int64(quota) {
			return apierr.New(apierr.Forbidden, "this key holds %d alert rules, the most its plan allows; delete one first", n)
		}
		return tx.Exec("INSERT INTO alert_rules ("+ruleCols+", changed_ms) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0, ?, ?)",
			r.ID, keyID, r.Name, target, cond, r.forDur.Milliseconds(), r.WebhookURL, secret, now, now).Error
	})
	var ae *apierr.Error
	if errors.As(err, &ae) {
		return Rule{}, "", err
	}
	if err != nil {
		return Rule{}, "", errStore(err)
	}
	return r, secret, nil
}

// Rules lists keyID's rules, oldest first.
func (s *Store) Rules(ctx context.Context, keyID string) ([]Rule, error) {
	var rows []ruleRow
	if err := s.db.WithContext(ctx).Raw("SELECT "+ruleCols+" FROM alert_rules WHERE key_id = ? AND deleted_ms = 0 ORDER BY created_ms, id", keyID).
		Scan(&rows).Error; err != nil {
		return nil, errStore(err)
	}
	return toRules(rows)
}

func toRules(rows []ruleRow) ([]Rule, error) {
	out := make([]Rule, 0, len(rows))
	for _, row := range rows {
		r, err := row.rule()
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Rule returns keyID's rule id (404 for another key's).
func (s *Store) Rule(ctx context.Context, keyID, id string) (Rule, error) {
	if _, err := uuid.Parse(id); err != nil {
		return Rule{}, apierr.Invalid("id", "%q is not a rule id (a UUID)", clip(id))
	}
	var rows []ruleRow
	if err := s.db.WithContext(ctx).Raw("SELECT "+ruleCols+" FROM alert_rules WHERE id = ? AND key_id = ? AND deleted_ms = 0", id, keyID).
		Scan(&rows).Error; err != nil {
		return Rule{}, errStore(err)
	}
	if len(rows) == 0 {
		return Rule{}, errNoRule
	}
	return rows[0].rule()
}

// DeleteRule removes keyID's rule id: it stops evaluating, and its pending deliveries are
// dropped. Its events stay listed.
func (s *Store) DeleteRule(ctx context.Context, keyID, id string) error {
	if _, err := s.Rule(ctx, keyID, id); err != nil {
		return err
	}
	now := s.now().UnixMilli()
	err := s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		if err := tx.Exec("UPDATE alert_rules SET deleted_ms = ?, changed_ms = ? WHERE id = ? AND key_id = ?", now, now, id, keyID).Error; err != nil {
			return err
		}
		if err := tx.Exec("DELETE FROM alert_state WHERE rule_id = ?", id).Error; err != nil {
			return err
		}
		return tx.Exec("DELETE FROM alert_outbox WHERE rule_id = ?", id).Error
	})
	if err != nil {
		return errStore(err)
	}
	return nil
}

// liveRules is every rule that is not deleted, for the evaluator, and a version that
// changes whenever a rule is created or deleted.
func (s *Store) liveRules(ctx context.Context) ([]Rule, ruleVersion, error) {
	v, err := s.ruleVersion(ctx)
	if err != nil {
		return nil, v, err
	}
	var rows []ruleRow
	if err := s.db.WithContext(ctx).Raw("SELECT " + ruleCols + " FROM alert_rules WHERE deleted_ms = 0").Scan(&rows).Error; err != nil {
		return nil, v, fmt.Errorf("alerts: load rules: %w", err)
	}
	rules, err := toRules(rows)
	return rules, v, err
}

type ruleVersion struct{ Count, Changed int64 }

func (s *Store) ruleVersion(ctx context.Context) (ruleVersion, error) {
	var v ruleVersion
	err := s.db.WithContext(ctx).Raw("SELECT count(*) AS count, coalesce(max(changed_ms), 0) AS changed FROM alert_rules").Scan(&v).Error
	if err != nil {
		return v, fmt.Errorf("alerts: rule version: %w", err)
	}
	return v, nil
}

// EventPage is a page of events, oldest first, and the cursor of the next ("" at the end).
type EventPage struct {
	Events     []Event `json:"events"`
	NextCursor string  `json:"next_cursor"`
}

// Events lists keyID's events created at or after since and after the cursor's event.
func (s *Store) Events(ctx context.Context, keyID string, since time.Time, afterSeq int64, limit int) (EventPage, error) {
	var rows []struct {
		Seq  int64
		Body string
	}
	if err := s.db.WithContext(ctx).Raw("SELECT seq, body FROM alert_events WHERE key_id = ? AND seq > ? AND created_ms >= ? ORDER BY seq LIMIT ?",
		keyID, afterSeq, since.UnixMilli(), limit+1).Scan(&rows).Error; err != nil {
		return EventPage{}, errStore(err)
	}
	page := EventPage{Events: make([]Event, 0, len(rows))}
	for i, row := range rows {
		if i == limit {
			page.NextCursor = fmt.Sprint(rows[i-1].Seq)
			break
		}
		var e Event
		if err := json.Unmarshal([]byte(row.Body), &e); err != nil {
			return EventPage{}, fmt.Errorf("alerts: event %d: %w", row.Seq, err)
		}
		page.Events = append(page.Events, e)
	}
	return page, nil
}

// Recent returns keyID's newest limit events, oldest first: what an agent reads to catch
// up (the MCP alert events resource).
func (s *Store) Recent(ctx context.Context, keyID string, limit int) ([]Event, error) {
	var bodies []string
	if err := s.db.WithContext(ctx).Raw("SELECT body FROM (SELECT seq, body FROM alert_events WHERE key_id = ? ORDER BY seq DESC LIMIT ?) AS newest ORDER BY seq",
		keyID, limit).Scan(&bodies).Error; err != nil {
		return nil, errStore(err)
	}
	out := make([]Event, 0, len(bodies))
	for _, b := range bodies {
		var e Event
		if err := json.Unmarshal([]byte(b), &e); err != nil {
			return nil, fmt.Errorf("alerts: stored event: %w", err)
		}
		out = append(out, e)
	}
	return out, nil
}

// Delivery is one attempt to deliver an event to a rule's webhook.
type Delivery struct {
	EventID    string    `json:"event_id"`
	Attempt    int       `json:"attempt"`
	At         time.Time `json:"at"`
	Status     int       `json:"status"`
	Error      string    `json:"error,omitempty"`
	DurationMS int64     `json:"duration_ms"`
	// Outcome: delivered, retry (a later attempt follows), gave_up (72 h passed) or
	// disabled (410 Gone).
	Outcome string `json:"outcome"`
}

// Deliveries lists the newest delivery attempts of keyID's rule, newest first.
func (s *Store) Deliveries(ctx context.Context, keyID, ruleID string, limit int) ([]Delivery, error) {
	if _, err := s.Rule(ctx, keyID, ruleID); err != nil {
		return nil, err
	}
	var rows []struct {
		EventID    string
		Attempt    int
		AtMS       int64
		Status     int
		Error      string
		DurationMS int64
		Outcome    string
	}
	if err := s.db.WithContext(ctx).Raw("SELECT event_id, attempt, at_ms, status, error, duration_ms, outcome FROM alert_deliveries WHERE rule_id = ? ORDER BY id DESC LIMIT ?",
		ruleID, limit).Scan(&rows).Error; err != nil {
		return nil, errStore(err)
	}
	out := make([]Delivery, 0, len(rows))
	for _, r := range rows {
		out = append(out, Delivery{EventID: r.EventID, Attempt: r.Attempt, At: time.UnixMilli(r.AtMS).UTC(), Status: r.Status,
			Error: r.Error, DurationMS: r.DurationMS, Outcome: r.Outcome})
	}
	return out, nil
}

// Replay queues keyID's event id for delivery again (same webhook-id), and returns it.
func (s *Store) Replay(ctx context.Context, keyID, id string) (Event, error) {
	var rows []struct {
		Seq    int64
		RuleID string
		Body   string
	}
	if err := s.db.WithContext(ctx).Raw("SELECT seq, rule_id, body FROM alert_events WHERE id = ? AND key_id = ?", id, keyID).Scan(&rows).Error; err != nil {
		return Event{}, errStore(err)
	}
	if len(rows) == 0 {
		return Event{}, apierr.New(apierr.NotFound, "no alert event with this id for this key")
	}
	r, err := s.Rule(ctx, keyID, rows[0].RuleID)
	if err != nil {
		return Event{}, err
	}
	if r.WebhookURL == "" {
		return Event{}, apierr.Invalid("id", "the event's rule has no webhook_url to deliver to")
	}
	now := s.now().UnixMilli()
	if err := s.db.WithContext(ctx).Exec("INSERT INTO alert_outbox (event_seq, rule_id, attempts, first_ms, next_ms) VALUES (?, ?, 0, ?, ?)",
		rows[0].Seq, rows[0].RuleID, now, now).Error; err != nil {
		return Event{}, errStore(err)
	}
	var e Event
	if err := json.Unmarshal([]byte(rows[0].Body), &e); err != nil {
		return Event{}, fmt.Errorf("alerts: event %s: %w", id, err)
	}
	return e, nil
}

// ErrFenced: another evaluator advanced the service's cursor first; this one's work is
// rolled back (it is no longer the leader).
var ErrFenced = errors.New("alerts: the log cursor moved under this evaluator")

// stateRow is one (rule, sensor) state as the evaluator keeps it.
type stateRow struct {
	RuleID, SensorID, State string
	SinceMS, LastMS         int64
}

// commit stores what one log entry of service caused: the states that changed, the events
// and their outbox rows, and the cursor moved from prev to pos; ErrFenced when the cursor
// was not at prev any more.
func (s *Store) commit(ctx context.Context, service, prev, pos string, states []stateRow, events []pendingEvent) error {
	now := s.now().UnixMilli()
	return s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		res := tx.Exec("UPDATE alert_cursors SET pos = ? WHERE service = ? AND pos = ?", pos, service, prev)
		if res.Error != nil {
			return res.Error
		}
		if res.RowsAffected != 1 {
			return ErrFenced
		}
		return writeEffects(tx, now, states, events)
	})
}

func writeEffects(tx *gorm.DB, now int64, states []stateRow, events []pendingEvent) error {
	for _, st := range states {
		if err := tx.Exec(`INSERT INTO alert_state (rule_id, sensor_id, state, since_ms, last_ms) VALUES (?, ?, ?, ?, ?)
ON CONFLICT (rule_id, sensor_id) DO UPDATE SET state = excluded.state, since_ms = excluded.since_ms, last_ms = excluded.last_ms`,
			st.RuleID, st.SensorID, st.State, st.SinceMS, st.LastMS).Error; err != nil {
			return err
		}
	}
	for _, pe := range events {
		body, err := toJSON(pe.Event)
		if err != nil {
			return err
		}
		var seq int64
		if err := tx.Raw("INSERT INTO alert_events (id, rule_id, key_id, body, created_ms) VALUES (?, ?, ?, ?, ?) RETURNING seq",
			pe.ID, pe.RuleID, pe.keyID, body, now).Scan(&seq).Error; err != nil {
			return err
		}
		if pe.webhook {
			if err := tx.Exec("INSERT INTO alert_outbox (event_seq, rule_id, attempts, first_ms, next_ms) VALUES (?, ?, 0, ?, ?)",
				seq, pe.RuleID, now, now).Error; err != nil {
				return err
			}
		}
	}
	return nil
}

// cursors returns each service's consumed log position, creating a row at head for a
// service never seen (its earlier readings are not evaluated: rules apply from now on).
func (s *Store) cursor(ctx context.Context, service, head string) (string, error) {
	db := s.db.WithContext(ctx)
	if err := db.Exec("INSERT INTO alert_cursors (service, pos) VALUES (?, ?) ON CONFLICT (service) DO NOTHING", service, head).Error; err != nil {
		return "", fmt.Errorf("alerts: cursor of %s: %w", service, err)
	}
	var pos []string
	if err := db.Raw("SELECT pos FROM alert_cursors WHERE service = ?", service).Scan(&pos).Error; err != nil || len(pos) != 1 {
		return "", fmt.Errorf("alerts: cursor of %s: %w", service, errors.Join(err, sql.ErrNoRows))
	}
	return pos[0], nil
}

// states loads every state row of a sensor, by rule.
func (s *Store) states(ctx context.Context, sensorID string) (map[string]stateRow, error) {
	return s.stateRows(ctx, "sensor_id", sensorID, "state of "+sensorID, func(r stateRow) string { return r.RuleID })
}

// ruleStates loads every state row of a rule, by sensor.
func (s *Store) ruleStates(ctx context.Context, ruleID string) (map[string]stateRow, error) {
	return s.stateRows(ctx, "rule_id", ruleID, "state of rule "+ruleID, func(r stateRow) string { return r.SensorID })
}

// stateRows loads the state rows whose column (rule_id or sensor_id) is id, by key; what
// names them in an error.
func (s *Store) stateRows(ctx context.Context, column, id, what string, key func(stateRow) string) (map[string]stateRow, error) {
	var rows []stateRow
	if err := s.db.WithContext(ctx).Raw("SELECT rule_id, sensor_id, state, since_ms, last_ms FROM alert_state WHERE "+column+" = ?", id).
		Scan(&rows).Error; err != nil {
		return nil, fmt.Errorf("alerts: %s: %w", what, err)
	}
	out := make(map[string]stateRow, len(rows))
	for _, r := range rows {
		out[key(r)] = r
	}
	return out, nil
}

// MaxRotationGrace bounds how long a rotated-out secret keeps signing.
const MaxRotationGrace = 7 * 24 * time.Hour

// RotateSecret gives keyID's rule a new webhook secret and keeps the old one signing for
// grace (both signatures in webhook-signature meanwhile), and returns the new secret and
// the end of the overlap.
func (s *Store) RotateSecret(ctx context.Context, keyID, id string, grace time.Duration) (string, time.Time, error) {
	r, err := s.Rule(ctx, keyID, id)
	if err != nil {
		return "", time.Time{}, err
	}
	if r.WebhookURL == "" {
		return "", time.Time{}, apierr.Invalid("id", "the rule has no webhook_url, so no secret to rotate")
	}
	secret, err := NewSecret()
	if err != nil {
		return "", time.Time{}, err
	}
	until := s.now().Add(grace).UTC().Truncate(time.Millisecond)
	if err := s.db.WithContext(ctx).Exec("UPDATE alert_rules SET previous_secret = webhook_secret, previous_until_ms = ?, webhook_secret = ? WHERE id = ? AND key_id = ?",
		until.UnixMilli(), secret, id, keyID).Error; err != nil {
		return "", time.Time{}, errStore(err)
	}
	return secret, until, nil
}
