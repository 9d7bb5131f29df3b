package alerts

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/stream"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// memLog is an in-test service log of stored readings (the services' logs are tested in
// services/runtime/live; here it feeds real hubs as a service's GET /v1/events would).
type memLog struct {
	mu     sync.Mutex
	events []contract.Event
	notify chan struct{}
}

func newMemLog() *memLog { return &memLog{notify: make(chan struct{})} }

// add appends a reading of sensor with pm25 = v at t.
func (l *memLog) add(sensor string, v float64, t time.Time) {
	l.mu.Lock()
	k := len(l.events) + 1
	l.events = append(l.events, contract.Event{Pos: fmt.Sprintf("%d-0", k), SensorID: sensor, ExternalID: "X",
		Reading: []byte(fmt.Sprintf(`{"id":"r%d","timestamp":%q,"measurements":[{"parameter":"pm2_5_ug_per_m3","value":%g,"unit":"µg/m³"}],"location":null}`,
			k, t.UTC().Format(time.RFC3339Nano), v))})
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
}

func (l *memLog) Events(ctx context.Context, after string, limit int, wait time.Duration) (contract.EventsPage, error) {
	for {
		l.mu.Lock()
		last := fmt.Sprintf("%d-0", len(l.events))
		if after == "" {
			l.mu.Unlock()
			return contract.EventsPage{Last: last}, nil
		}
		p, err := contract.ParsePosition(after)
		if err != nil {
			l.mu.Unlock()
			return contract.EventsPage{}, err
		}
		if i := int(p.MS); i < len(l.events) {
			evs := append([]contract.Event(nil), l.events[i:min(len(l.events), i+limit)]...)
			l.mu.Unlock()
			return contract.EventsPage{Events: evs, Last: last, Oldest: "1-0"}, nil
		}
		notify := l.notify
		l.mu.Unlock()
		if wait <= 0 {
			return contract.EventsPage{Last: last}, nil
		}
		select {
		case <-notify:
		case <-time.After(wait):
			wait = 0
		case <-ctx.Done():
			return contract.EventsPage{}, ctx.Err()
		}
	}
}

// replica is one gateway's evaluation: its own hub over the shared service log.
func startReplica(t testing.TB, ctx context.Context, st *Store, log *memLog, leader Leader) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(ctx)
	hub := stream.NewHub(stream.HubOptions{Sources: map[string]stream.Source{"airquality": log}, Wait: 200 * time.Millisecond, Backoff: 50 * time.Millisecond})
	ev := NewEvaluator(EvaluatorOptions{Store: st, Hub: hub, Leader: leader, RulesEvery: 20 * time.Millisecond})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); hub.Run(ctx) }()
	go func() { defer wg.Done(); ev.Run(ctx) }()
	return func() { cancel(); hub.Close(); wg.Wait() }
}

// sensorA and sensorB are sensors of the tests' catalog (seedCatalog).
const (
	sensorA = "5f0c7a52-3c4e-5a55-9d3b-1c5a0e2b7f11"
	sensorB = "6a1d8b63-4d5f-5b66-8e4c-2d6b1f3c8a22"
)

func newThresholdRule(t *testing.T, st *Store, key string) Rule {
	t.Helper()
	r, err := CreateRequest{Name: "pm25", Target: Target{SensorIDs: []string{sensorA}},
		Condition: Condition{Parameter: "pm2_5_ug_per_m3", Op: OpAbove, Value: ptr(35)}, For: "PT0S"}.validate()
	if err != nil {
		t.Fatal(err)
	}
	r, _, err = st.CreateRule(context.Background(), key, r, 100)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// allEvents pages through key's events.
func allEvents(t *testing.T, st *Store, key string) []Event {
	t.Helper()
	var out []Event
	var after int64
	for {
		p, err := st.Events(context.Background(), key, time.Time{}, after, MaxLimit)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Events...)
		if p.NextCursor == "" {
			return out
		}
		fmt.Sscan(p.NextCursor, &after)
	}
}

// checkAlternating: n events, each reading's crossing exactly once, in reading order.
func checkAlternating(t *testing.T, evs []Event, n int, t0 time.Time) {
	t.Helper()
	if len(evs) != n {
		t.Fatalf("%d events, want %d (one per crossing, none lost, none twice)", len(evs), n)
	}
	for i, e := range evs {
		want := StateFiring
		if i%2 == 1 {
			want = StateResolved
		}
		if e.State != want || !e.ReadingTimestamp.Equal(t0.Add(time.Duration(i)*time.Second)) {
			t.Fatalf("event %d: %s at %s, want %s at %s", i, e.State, e.ReadingTimestamp, want, t0.Add(time.Duration(i)*time.Second))
		}
	}
}

func waitEvents(t *testing.T, st *Store, key string, n int) []Event {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		evs := allEvents(t, st, key)
		if len(evs) >= n || time.Now().After(deadline) {
			time.Sleep(300 * time.Millisecond) // room for a duplicate to show
			return allEvents(t, st, key)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestEvaluationOncePerReadingAcrossReplicas: two replicas that both believe they lead
// (the worst case of a failover: the old leader has not noticed yet) evaluate the same
// log; the compare-and-set cursor lets exactly one commit each reading's events.
func TestEvaluationOncePerReadingAcrossReplicas(t *testing.T) {
	eachDialect(t, func(t *testing.T, pg bool) {
		if !pg {
			t.Skip("SQLite is one process (make run): one evaluator")
		}
		cat := openCatalog(t, true)
		st := openStore(t, cat)
		newThresholdRule(t, st, "k1")
		log := newMemLog()
		ctx := context.Background()
		stop1 := startReplica(t, ctx, st, log, LocalLeader{})
		stop2 := startReplica(t, ctx, st, log, LocalLeader{})
		defer stop1()
		defer stop2()
		waitCursor(t, st)
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		const n = 200
		for i := 0; i < n; i++ {
			v := 40.0
			if i%2 == 1 {
				v = 20
			}
			log.add(sensorA, v, t0.Add(time.Duration(i)*time.Second))
		}
		checkAlternating(t, waitEvents(t, st, "k1", n), n, t0)
	})
}

// waitCursor waits for an evaluator to have started at the log's head.
func waitCursor(t testing.TB, st *Store) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		var n int64
		if err := st.db.Raw("SELECT count(*) FROM alert_cursors WHERE service = 'airquality'").Scan(&n).Error; err == nil && n == 1 {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("no evaluator started within 10 s")
}

// TestFailoverToAnotherReplica: the leader stops in the middle of a burst; the other
// replica takes the advisory lock and continues from the stored cursor, with no reading
// lost or evaluated twice.
func TestFailoverToAnotherReplica(t *testing.T) {
	cat := openCatalog(t, true)
	st := openStore(t, cat)
	newThresholdRule(t, st, "k1")
	log := newMemLog()
	sqlDB, err := cat.DB().DB()
	if err != nil {
		t.Fatal(err)
	}
	leader := PostgresLeader{DB: sqlDB, Poll: 100 * time.Millisecond}
	ctx := context.Background()
	stop1 := startReplica(t, ctx, st, log, leader)
	waitCursor(t, st)
	stop2 := startReplica(t, ctx, st, log, leader)
	defer stop2()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 300
	for i := 0; i < n; i++ {
		if i == n/3 {
			stop1()
		}
		v := 40.0
		if i%2 == 1 {
			v = 20
		}
		log.add(sensorA, v, t0.Add(time.Duration(i)*time.Second))
		if i%50 == 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	checkAlternating(t, waitEvents(t, st, "k1", n), n, t0)
}
