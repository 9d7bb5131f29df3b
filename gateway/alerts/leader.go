package alerts

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Leader elects the one replica that evaluates.
type Leader interface {
	// Acquire blocks until this replica leads (or ctx ends). lost is closed when the
	// leadership is lost; release gives it up.
	Acquire(ctx context.Context) (lost <-chan struct{}, release func(), err error)
}

// leaderLockKey is the PostgreSQL advisory lock the evaluating replica holds ("sgalrtev").
const leaderLockKey = int64(0x7367616c72746576)

// PostgresLeader holds a session advisory lock on a connection of its own: the replica
// holding it evaluates; when its process dies or its connection breaks, PostgreSQL frees
// the lock and the next replica polling for it takes over (within Poll).
type PostgresLeader struct {
	DB *sql.DB
	// Poll is how often a follower tries the lock and the leader checks its connection
	// (default 2 s).
	Poll time.Duration
}

// Acquire implements Leader.
func (p PostgresLeader) Acquire(ctx context.Context) (<-chan struct{}, func(), error) {
	poll := p.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	for {
		conn, err := p.DB.Conn(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("alerts: leader connection: %w", err)
		}
		var got bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1)", leaderLockKey).Scan(&got); err != nil {
			_ = conn.Close()
			return nil, nil, fmt.Errorf("alerts: leader lock: %w", err)
		}
		if got {
			return p.hold(ctx, conn, poll)
		}
		_ = conn.Close()
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(poll):
		}
	}
}

// hold watches the connection that holds the lock: a failed ping means the lock may be
// gone, so the leadership ends.
func (p PostgresLeader) hold(ctx context.Context, conn *sql.Conn, poll time.Duration) (<-chan struct{}, func(), error) {
	lost := make(chan struct{})
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(lost)
		t := time.NewTicker(poll)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				pctx, cancel := context.WithTimeout(context.Background(), poll)
				err := conn.PingContext(pctx)
				cancel()
				if err != nil {
					return
				}
			}
		}
	}()
	release := func() {
		close(stop)
		<-done
		uctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = conn.ExecContext(uctx, "SELECT pg_advisory_unlock($1)", leaderLockKey)
		_ = conn.Close()
	}
	return lost, release, nil
}

// LocalLeader is the single process of a SQLite gateway (make run): it always leads.
type LocalLeader struct{}

// Acquire implements Leader.
func (LocalLeader) Acquire(context.Context) (<-chan struct{}, func(), error) {
	return make(chan struct{}), func() {}, nil
}
