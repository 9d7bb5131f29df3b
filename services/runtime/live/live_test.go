package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/runtime/live"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

func logs(t *testing.T) map[string]live.Log {
	_, prefix := testenv.Redis(t)
	r, err := live.NewRedis(context.Background(), testenv.RedisURL(), prefix, "ocean")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return map[string]live.Log{"memory": live.NewMemory(0, 0, nil), "redis": r}
}

func entries(from, n int) []live.Entry {
	out := make([]live.Entry, n)
	for i := range out {
		out[i] = live.Entry{Body: fmt.Appendf(nil, `{"sensor_id":"s","external_id":"X","reading":{"n":%d}}`, from+i)}
	}
	return out
}

// TestLogOrderAndResume: every entry is read once, in order, from any position, by any
// number of readers; Last and Oldest say where the log stands.
func TestLogOrderAndResume(t *testing.T) {
	for name, l := range logs(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			head, err := l.Read(ctx, nil, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if head.Oldest != nil || len(head.Entries) != 0 {
				t.Fatalf("empty log = %+v", head)
			}
			start := head.Last
			for i := 0; i < 5; i++ {
				if err := l.Append(ctx, entries(i*10, 10)); err != nil {
					t.Fatal(err)
				}
			}
			var seen []int
			pos := start
			for {
				p, err := l.Read(ctx, &pos, 7, 0)
				if err != nil {
					t.Fatal(err)
				}
				if len(p.Entries) == 0 {
					if p.Last != pos {
						t.Errorf("caught up at %s but Last is %s", pos, p.Last)
					}
					break
				}
				for i, e := range p.Entries {
					var b struct {
						Reading struct{ N int } `json:"reading"`
					}
					if err := json.Unmarshal(e.Body, &b); err != nil {
						t.Fatal(err)
					}
					seen = append(seen, b.Reading.N)
					if p.Positions[i].Compare(pos) <= 0 {
						t.Fatalf("position %s not after %s", p.Positions[i], pos)
					}
					pos = p.Positions[i]
				}
			}
			if len(seen) != 50 {
				t.Fatalf("read %d entries, want 50", len(seen))
			}
			for i, n := range seen {
				if n != i {
					t.Fatalf("entry %d is %d: out of order", i, n)
				}
			}
			// Resume from the middle: exactly the rest.
			mid, _ := l.Read(ctx, &start, 20, 0)
			rest, _ := l.Read(ctx, &mid.Positions[19], 100, 0)
			if len(rest.Entries) != 30 {
				t.Errorf("resume after the 20th: %d entries, want 30", len(rest.Entries))
			}
			if rest.Oldest == nil || rest.Oldest.Compare(mid.Positions[0]) != 0 {
				t.Errorf("oldest = %v, want %s", rest.Oldest, mid.Positions[0])
			}
		})
	}
}

// TestLogWaitWakes: a waiting reader gets an entry appended while it waits, and a wait
// with nothing appended returns empty.
func TestLogWaitWakes(t *testing.T) {
	for name, l := range logs(t) {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			head, err := l.Read(ctx, nil, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var got live.Page
			var rerr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, rerr = l.Read(ctx, &head.Last, 10, 10*time.Second)
			}()
			time.Sleep(100 * time.Millisecond)
			if err := l.Append(ctx, entries(0, 1)); err != nil {
				t.Fatal(err)
			}
			wg.Wait()
			if rerr != nil || len(got.Entries) != 1 {
				t.Fatalf("waiting read = %+v, %v; want the appended entry", got, rerr)
			}
			empty, err := l.Read(ctx, &got.Positions[0], 10, 50*time.Millisecond)
			if err != nil || len(empty.Entries) != 0 {
				t.Fatalf("wait with nothing new = %+v, %v", empty, err)
			}
		})
	}
}

// TestMemoryRetention: entries older than the retention are dropped, and a restarted
// log continues after the positions of the one before.
func TestMemoryRetention(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	m := live.NewMemory(time.Hour, 0, clock)
	ctx := context.Background()
	_ = m.Append(ctx, entries(0, 3))
	first, _ := m.Read(ctx, nil, 0, 0)
	now = now.Add(61 * time.Minute)
	_ = m.Append(ctx, entries(3, 2))
	p, _ := m.Read(ctx, &contract.Position{}, 10, 0)
	if len(p.Entries) != 2 || p.Oldest == nil || p.Oldest.Compare(first.Last) <= 0 {
		t.Fatalf("after retention: %d entries, oldest %v; want the 2 recent ones", len(p.Entries), p.Oldest)
	}
	now = now.Add(time.Second) // a restart takes longer than a millisecond
	restarted := live.NewMemory(time.Hour, 0, clock)
	_ = restarted.Append(ctx, entries(5, 1))
	q, _ := restarted.Read(ctx, &p.Last, 10, 0)
	if len(q.Entries) != 1 {
		t.Fatalf("restarted log after the old head: %d entries, want 1", len(q.Entries))
	}
}

// TestPublisherSkipsHistory: readings observed longer ago than MaxLag are not news.
func TestPublisherSkipsHistory(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	m := live.NewMemory(0, 0, func() time.Time { return now })
	p := &live.Publisher{ServiceID: "ocean", Log: m, Now: func() time.Time { return now },
		Encode: func(st contract.Station, r store.Reading) ([]byte, error) {
			return fmt.Appendf(nil, `{"timestamp":%q}`, contract.FormatTime(r.Time)), nil
		}}
	st := contract.Station{ExternalID: "TPLM2"}
	p.Committed(context.Background(), []store.Committed{
		{Station: st, Reading: store.Reading{Time: now.Add(-live.MaxLag - time.Minute)}},
		{Station: st, Reading: store.Reading{Time: now.Add(-time.Minute)}},
	})
	page, _ := m.Read(context.Background(), &contract.Position{}, 10, 0)
	ev := live.EventsPage(page)
	if len(ev.Events) != 1 || ev.Events[0].ExternalID != "TPLM2" || ev.Events[0].SensorID == "" ||
		string(ev.Events[0].Reading) != fmt.Sprintf(`{"timestamp":%q}`, contract.FormatTime(now.Add(-time.Minute))) {
		t.Fatalf("published %+v, want only the recent reading", ev.Events)
	}
}
