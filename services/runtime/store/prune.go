package store

import (
	"context"
	"fmt"
	"time"
)

// Prune implements Store: it removes the readings older than before, with their blocks,
// and keeps the stations' counters right. On PostgreSQL whole monthly partitions that lie
// entirely before the cutoff are dropped (no row is read or deleted for them), and the
// rest of the boundary month is deleted; on SQLite the rows are deleted. Afterwards this
// process stores no reading older than the cutoff again.
func (s *sqlStore) Prune(ctx context.Context, before time.Time) (int64, error) {
	cut := before.UnixMilli()
	// No batch of this process is half written meanwhile; other replicas' batches
	// serialize on the station rows and, on PostgreSQL, on the dropped partitions' locks.
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	var removed int64
	err := s.d.inTx(ctx, func(tx txn) error {
		removed = 0
		gone, err := tx.dropMonthsBefore(ctx, cut)
		if err != nil {
			return err
		}
		boundary, err := tx.deleteReadingsBefore(ctx, cut)
		if err != nil {
			return err
		}
		for k, n := range boundary {
			gone[k] += n
		}
		for k, n := range gone {
			removed += n
			if _, err := tx.exec(ctx, s.q(`UPDATE stations SET reading_count = reading_count - ? WHERE skey = ?`), n, k); err != nil {
				return fmt.Errorf("prune: counter of station %d: %w", k, err)
			}
		}
		// Blocks whose readings are all gone (and blocks that lost a race to another
		// replica and were never referenced).
		if _, err := tx.exec(ctx, s.q(`DELETE FROM blocks WHERE ts < ? AND ts_last < ?`), cut, cut); err != nil {
			return fmt.Errorf("prune: blocks: %w", err)
		}
		// Rollups of the hours wholly before the cutoff go with their readings (the hour
		// holding the cutoff keeps its summary until it is wholly gone).
		if _, err := tx.exec(ctx, s.q(`DELETE FROM rollups WHERE hour < ?`), hourOf(cut)); err != nil {
			return fmt.Errorf("prune: rollups: %w", err)
		}
		// A station whose newest reading was removed has none left.
		if _, err := tx.exec(ctx, s.q(`UPDATE stations SET last_reading_ms = (SELECT max(ts) FROM readings r WHERE r.station = stations.skey)
			WHERE last_reading_ms < ?`), cut); err != nil {
			return fmt.Errorf("prune: last readings: %w", err)
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("prune readings before %s: %w", before.UTC().Format(time.RFC3339), err)
	}
	for old := s.horizon.Load(); cut > old && !s.horizon.CompareAndSwap(old, cut); old = s.horizon.Load() {
	}
	s.d.pruned(cut)
	return removed, nil
}
