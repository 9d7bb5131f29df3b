package store

import (
	"context"
	"fmt"
	"strings"
)

// EventRow is one entry of the service's reading log as the store keeps it: its position
// (the log's ms and sequence) and its body.
type EventRow struct {
	MS, Seq uint64
	Body    []byte
}

// EventTable is the store's copy of the in-process reading log (docs/live.md): without
// Redis the log lives in process memory, and this table lets a restarted service answer
// cursors from before the restart within the retention.
type EventTable interface {
	// AppendEvents stores rows (positions unique and increasing), in one statement per
	// 500 rows.
	AppendEvents(ctx context.Context, rows []EventRow) error
	// EventsAfter returns up to limit rows after (ms, seq), oldest first.
	EventsAfter(ctx context.Context, ms, seq uint64, limit int) ([]EventRow, error)
	// EventBounds returns the oldest and newest positions stored (ok false when none).
	EventBounds(ctx context.Context) (oldest, newest EventRow, ok bool, err error)
	// PruneEvents deletes the rows logged before ms.
	PruneEvents(ctx context.Context, beforeMS uint64) error
}

// Events returns the event table of st (every store of this package has one).
func Events(st Store) (EventTable, bool) {
	et, ok := st.(EventTable)
	return et, ok
}

const eventsPerInsert = 500

// AppendEvents implements EventTable.
func (s *sqlStore) AppendEvents(ctx context.Context, rows []EventRow) error {
	for len(rows) > 0 {
		n := min(len(rows), eventsPerInsert)
		var b strings.Builder
		b.WriteString("INSERT INTO live_events (pos_ms, pos_seq, body) VALUES ")
		args := make([]any, 0, 3*n)
		for i, r := range rows[:n] {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("(?, ?, ?)")
			args = append(args, int64(r.MS), int64(r.Seq), r.Body)
		}
		b.WriteString(" ON CONFLICT (pos_ms, pos_seq) DO NOTHING")
		if _, err := s.db.ExecContext(ctx, s.q(b.String()), args...); err != nil {
			return fmt.Errorf("store: append %d log entries: %w", n, err)
		}
		rows = rows[n:]
	}
	return nil
}

// EventsAfter implements EventTable; the primary key serves the range.
func (s *sqlStore) EventsAfter(ctx context.Context, ms, seq uint64, limit int) ([]EventRow, error) {
	rows, err := s.d.query(ctx, s.q(`SELECT pos_ms, pos_seq, body FROM live_events
	WHERE pos_ms > ? OR (pos_ms = ? AND pos_seq > ?) ORDER BY pos_ms, pos_seq LIMIT ?`), int64(ms), int64(ms), int64(seq), limit)
	if err != nil {
		return nil, fmt.Errorf("store: read log entries: %w", err)
	}
	defer rows.Close()
	var out []EventRow
	for rows.Next() {
		var (
			m, q int64
			body []byte
		)
		if err := rows.Scan(&m, &q, &body); err != nil {
			return nil, fmt.Errorf("store: read log entries: %w", err)
		}
		out = append(out, EventRow{MS: uint64(m), Seq: uint64(q), Body: body})
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read log entries: %w", err)
	}
	return out, nil
}

// EventBounds implements EventTable.
func (s *sqlStore) EventBounds(ctx context.Context) (oldest, newest EventRow, ok bool, err error) {
	for i, q := range []string{
		`SELECT pos_ms, pos_seq FROM live_events ORDER BY pos_ms, pos_seq LIMIT 1`,
		`SELECT pos_ms, pos_seq FROM live_events ORDER BY pos_ms DESC, pos_seq DESC LIMIT 1`,
	} {
		var m, sq int64
		rows, err := s.d.query(ctx, q)
		if err != nil {
			return oldest, newest, false, fmt.Errorf("store: log bounds: %w", err)
		}
		found := rows.Next()
		if found {
			err = rows.Scan(&m, &sq)
		}
		if err == nil {
			err = rows.Err()
		}
		rows.Close()
		if err != nil {
			return oldest, newest, false, fmt.Errorf("store: log bounds: %w", err)
		}
		if !found {
			return oldest, newest, false, nil
		}
		if i == 0 {
			oldest = EventRow{MS: uint64(m), Seq: uint64(sq)}
		} else {
			newest = EventRow{MS: uint64(m), Seq: uint64(sq)}
		}
	}
	return oldest, newest, true, nil
}

// PruneEvents implements EventTable.
func (s *sqlStore) PruneEvents(ctx context.Context, beforeMS uint64) error {
	if _, err := s.db.ExecContext(ctx, s.q(`DELETE FROM live_events WHERE pos_ms < ?`), int64(beforeMS)); err != nil {
		return fmt.Errorf("store: prune log entries: %w", err)
	}
	return nil
}
