package lease_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/runtime/ingest/lease"
)

func newLease(t *testing.T, url, service string) *lease.Postgres {
	t.Helper()
	l, err := lease.NewPostgres(url, service)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close(context.Background()) })
	return l
}

func hold(t *testing.T, l *lease.Postgres, provider string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	got, err := l.Hold(ctx, provider)
	if err != nil {
		t.Logf("hold %s: %v", provider, err)
	}
	return got
}

// One holder per (service, provider); other providers and other services are independent;
// Release and Close hand the lease to the next one that asks.
func TestOneHolderPerProvider(t *testing.T) {
	url := testenv.Postgres(t)
	a, b := newLease(t, url, "ocean"), newLease(t, url, "ocean")
	other := newLease(t, url, "weather")

	if !hold(t, a, "ndbc") {
		t.Fatal("a: first Hold of ndbc = false")
	}
	if !hold(t, a, "ndbc") {
		t.Fatal("a: Hold of a held lease = false")
	}
	if hold(t, b, "ndbc") {
		t.Fatal("b took ndbc while a holds it")
	}
	if !hold(t, b, "coops") {
		t.Fatal("b: coops is free but Hold = false")
	}
	if !hold(t, other, "ndbc") {
		t.Fatal("weather's ndbc lease is not ocean's, but Hold = false")
	}
	if err := a.Release(context.Background(), "ndbc"); err != nil {
		t.Fatal(err)
	}
	if !hold(t, b, "ndbc") {
		t.Fatal("b: ndbc released by a, Hold = false")
	}
	if hold(t, a, "ndbc") {
		t.Fatal("a took ndbc back while b holds it")
	}
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The server drops b's locks when its session ends, which follows the client's close
	// by a moment: a may have to ask more than once.
	deadline := time.Now().Add(10 * time.Second)
	for !hold(t, a, "ndbc") || !hold(t, a, "coops") {
		if time.Now().After(deadline) {
			t.Fatal("a: b closed its connection 10 s ago, yet a cannot take ndbc and coops")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// A holder whose connection is cut (as when PostgreSQL restarts or a network drops it)
// reports the lease lost instead of ingesting on a lock it no longer has, the lease goes to
// another replica, and the first one becomes a standby on a fresh connection.
func TestLostConnectionGivesTheLeaseUp(t *testing.T) {
	url := testenv.Postgres(t)
	a, b := newLease(t, url, "ocean"), newLease(t, url, "ocean")
	if !hold(t, a, "ndbc") {
		t.Fatal("a: Hold = false")
	}
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var pids []int
	rows, err := db.Query("SELECT pid FROM pg_stat_activity WHERE application_name = 'sensorgate-ocean-lease' AND datname = current_database() AND pid IN (SELECT pid FROM pg_locks WHERE locktype = 'advisory')")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(pids) != 1 {
		t.Fatalf("%d lease sessions hold advisory locks, want the holder's one", len(pids))
	}
	if _, err := db.Exec("SELECT pg_terminate_backend($1)", pids[0]); err != nil {
		t.Fatal(err)
	}
	// pg_terminate_backend only signals the session: its locks go when its process has
	// exited, which is when it leaves pg_stat_activity.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		var n int
		if err := db.QueryRow("SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pids[0]).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the holder's session %d is still there 10 s after pg_terminate_backend", pids[0])
		}
	}
	if !hold(t, b, "ndbc") {
		t.Fatal("b: the holder's session ended, yet Hold = false")
	}
	if hold(t, a, "ndbc") {
		t.Fatal("a still reports the lease after its connection was cut")
	}
	if hold(t, a, "ndbc") {
		t.Fatal("a (reconnected) took the lease b holds")
	}
}

func TestKeyIsStableAndDistinct(t *testing.T) {
	if lease.Key("ocean", "ndbc") != lease.Key("ocean", "ndbc") {
		t.Fatal("Key is not deterministic")
	}
	seen := map[int64]string{}
	for _, s := range []string{"ocean", "weather", "airquality"} {
		for _, p := range []string{"ndbc", "coops", "nws", "imperial_station", "openaq", "airnow", "ambient", "davis"} {
			k := lease.Key(s, p)
			if prev, dup := seen[k]; dup {
				t.Fatalf("Key(%s, %s) collides with %s", s, p, prev)
			}
			seen[k] = s + "/" + p
		}
	}
}
