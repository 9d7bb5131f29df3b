package alerts

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/stream"
)

// TestEvaluationOnEachDialect: one replica (make run's SQLite, or PostgreSQL) evaluates a
// burst of crossings, each once, and the staleness timer fires for a listed sensor whose
// catalog says it last reported two hours ago, then a reading resolves it.
func TestEvaluationOnEachDialect(t *testing.T) {
	eachDialect(t, func(t *testing.T, pg bool) {
		cat := openCatalog(t, pg)
		st := openStore(t, cat)
		newThresholdRule(t, st, "k1")
		stale, err := CreateRequest{Name: "quiet", Target: Target{SensorIDs: []string{sensorB}}, Condition: Condition{Op: OpStale}, For: "PT0S"}.validate()
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := st.CreateRule(context.Background(), "k2", stale, 10); err != nil {
			t.Fatal(err)
		}
		twoHoursAgo := time.Now().Add(-2 * time.Hour)
		lookup := func(_ context.Context, id string) (SensorInfo, bool, error) {
			return SensorInfo{IntervalS: 600, LastReadingAt: &twoHoursAgo}, true, nil
		}
		log := newMemLog()
		ctx, cancel := context.WithCancel(context.Background())
		hub := stream.NewHub(stream.HubOptions{Sources: map[string]stream.Source{"airquality": log}, Wait: 200 * time.Millisecond})
		ev := NewEvaluator(EvaluatorOptions{Store: st, Hub: hub, Leader: LocalLeader{}, Sensors: lookup,
			StaleEvery: 100 * time.Millisecond, RulesEvery: 20 * time.Millisecond})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); hub.Run(ctx) }()
		go func() { defer wg.Done(); ev.Run(ctx) }()
		defer func() { cancel(); hub.Close(); wg.Wait() }()
		waitCursor(t, st)

		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; i < 50; i++ {
			v := 40.0
			if i%2 == 1 {
				v = 20
			}
			log.add(sensorA, v, t0.Add(time.Duration(i)*time.Second))
		}
		checkAlternating(t, waitEvents(t, st, "k1", 50), 50, t0)

		quiet := waitEvents(t, st, "k2", 1)
		if len(quiet) != 1 || quiet[0].State != StateFiring || quiet[0].SensorID != sensorB || !quiet[0].ReadingTimestamp.Equal(twoHoursAgo.UTC().Truncate(time.Millisecond)) {
			t.Fatalf("stale events %+v, want one firing from the last reading", quiet)
		}
		time.Sleep(300 * time.Millisecond) // more ticks: still one
		now := time.Now()
		log.add(sensorB, 1, now)
		quiet = waitEvents(t, st, "k2", 2)
		if len(quiet) != 2 || quiet[1].State != StateResolved || !quiet[1].ReadingTimestamp.Equal(now.UTC().Truncate(time.Millisecond)) {
			t.Fatalf("stale events after a reading %+v, want firing then resolved", quiet)
		}
	})
}
