// Package lease decides which replica of a backing service ingests each provider when
// several replicas share one PostgreSQL readings database: the holder of a session-level
// advisory lock per (service, provider) polls, the others serve reads and try again. The
// lock lives as long as the lease's own connection, so a holder that dies (kill -9, a lost
// node) gives it up when PostgreSQL sees the connection close, at once for a dead process
// and within the TCP keepalive window (about 25 s) for a vanished host. docs/deploy.md
// ("Scaling out") explains the choice over a Kubernetes Lease or a separate ingest role.
package lease

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
)

// Postgres holds advisory locks on one dedicated connection (a pool would hand the
// session, and with it the locks, to other work).
type Postgres struct {
	cfg     *pgx.ConnConfig
	service string
	mu      sync.Mutex
	conn    *pgx.Conn
	held    map[string]bool
}

// keepalive settings of the lease's session: PostgreSQL drops a connection whose peer has
// vanished without a FIN after idle + interval*count = 10 + 5*3 s, which frees its locks.
const keepaliveSQL = "SET tcp_keepalives_idle = 10; SET tcp_keepalives_interval = 5; SET tcp_keepalives_count = 3"

// NewPostgres prepares a lease for service on the database at url; it connects on first use.
func NewPostgres(url, service string) (*Postgres, error) {
	cfg, err := pgx.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("lease: database URL: %w", err)
	}
	if cfg.ConnectTimeout == 0 || cfg.ConnectTimeout > 5*time.Second {
		cfg.ConnectTimeout = 5 * time.Second
	}
	cfg.RuntimeParams["application_name"] = "sensorgate-" + service + "-lease"
	return &Postgres{cfg: cfg, service: service, held: map[string]bool{}}, nil
}

// Key is the advisory lock key of a provider of a service: FNV-1a of their names, so every
// replica computes the same key without coordination.
func Key(service, provider string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("sensorgate-ingest\x00" + service + "\x00" + provider))
	return int64(h.Sum64())
}

// Hold takes or keeps the lease of provider and reports whether this process holds it. A
// held lease is confirmed by a round trip on its connection: if the connection is gone,
// so is the lock, and every lease of this process is reported lost (false with the error).
func (p *Postgres) Hold(ctx context.Context, provider string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		conn, err := pgx.ConnectConfig(ctx, p.cfg)
		if err != nil {
			return false, fmt.Errorf("lease: connect: %w", err)
		}
		if _, err := conn.Exec(ctx, keepaliveSQL); err != nil {
			_ = conn.Close(ctx)
			return false, fmt.Errorf("lease: keepalive settings: %w", err)
		}
		p.conn = conn
	}
	if p.held[provider] {
		if err := p.conn.Ping(ctx); err != nil {
			p.dropLocked()
			return false, fmt.Errorf("lease: connection lost, lease %s given up: %w", provider, err)
		}
		return true, nil
	}
	var got bool
	if err := p.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", Key(p.service, provider)).Scan(&got); err != nil {
		p.dropLocked()
		return false, fmt.Errorf("lease: try lock %s: %w", provider, err)
	}
	if got {
		p.held[provider] = true
	}
	return got, nil
}

// Release gives up the lease of provider, if held, so a standby replica takes over at its
// next try instead of waiting for this process to exit.
func (p *Postgres) Release(ctx context.Context, provider string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.held[provider] || p.conn == nil {
		return nil
	}
	delete(p.held, provider)
	if _, err := p.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", Key(p.service, provider)); err != nil {
		p.dropLocked()
		return fmt.Errorf("lease: unlock %s: %w", provider, err)
	}
	return nil
}

// Close ends the lease connection, which releases every lock it holds.
func (p *Postgres) Close(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.conn == nil {
		return nil
	}
	err := p.conn.Close(ctx)
	p.conn = nil
	clear(p.held)
	if err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("lease: close: %w", err)
	}
	return nil
}

// dropLocked forgets a broken connection and the leases it held.
func (p *Postgres) dropLocked() {
	if p.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = p.conn.Close(ctx)
		cancel()
	}
	p.conn = nil
	clear(p.held)
}
