package live_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
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
	return map[string]live.Log{"memory": live.NewMemory(0, 0, nil), "redis": r,
		"memory+postgres": attached(t, openStore(t, "postgres"), 0, nil), "memory+sqlite": attached(t, openStore(t, "sqlite"), 0, nil)}
}

// openStore opens a readings store on a fresh PostgreSQL database or SQLite file.
func openStore(t *testing.T, kind string) store.Store {
	t.Helper()
	o := store.Options{ServiceID: "ocean"}
	if kind == "postgres" {
		o.DatabaseURL = testenv.Postgres(t)
	} else {
		o.SQLitePath = filepath.Join(t.TempDir(), "readings.db")
	}
	st, err := store.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// attached is an in-process log with st's event table attached, as a service runs it.
func attached(t *testing.T, st store.Store, retention time.Duration, now func() time.Time) *live.Memory {
	t.Helper()
	tab, ok := store.Events(st)
	if !ok {
		t.Fatal("the store has no event table")
	}
	m := live.NewMemory(retention, 0, now)
	if err := m.Attach(context.Background(), tab); err != nil {
		t.Fatal(err)
	}
	return m
}

// readAll reads l from after to its end in pages of 7, returning the entries' numbers
// and the last position.
func readAll(t *testing.T, l live.Log, after contract.Position) ([]int, contract.Position) {
	t.Helper()
	var seen []int
	for {
		p, err := l.Read(context.Background(), &after, 7, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Entries) == 0 {
			return seen, after
		}
		for i, e := range p.Entries {
			var b struct {
				Reading struct{ N int } `json:"reading"`
			}
			if err := json.Unmarshal(e.Body, &b); err != nil {
				t.Fatal(err)
			}
			if p.Positions[i].Compare(after) <= 0 {
				t.Fatalf("position %s not after %s", p.Positions[i], after)
			}
			seen = append(seen, b.Reading.N)
			after = p.Positions[i]
		}
	}
}

// TestMemoryRestartKeepsUnread: an in-process log with the store attached is restarted
// (a new Memory on the same store, its clock even gone back a minute): a reader resuming
// from a position of the old run gets every entry after it exactly once, in order, the
// old run's unread ones (from the store) and then the new run's; the new run's positions
// come after the old ones. Entries beyond the retention are not served.
func TestMemoryRestartKeepsUnread(t *testing.T) {
	for _, kind := range []string{"postgres", "sqlite"} {
		t.Run(kind, func(t *testing.T) {
			ctx := context.Background()
			st := openStore(t, kind)
			now := time.Now()
			clock := func() time.Time { return now }
			old := attached(t, st, time.Hour, clock)
			start := contract.Position{}
			for i := 0; i < 3; i++ {
				if err := old.Append(ctx, entries(i*10, 10)); err != nil {
					t.Fatal(err)
				}
			}
			p, err := old.Read(ctx, &start, 12, 0) // a client read 12 of 30, then went away
			if err != nil || len(p.Entries) != 12 {
				t.Fatalf("first read: %d entries, %v", len(p.Entries), err)
			}
			cursor := p.Positions[11]
			oldLast := p.Last

			now = now.Add(-time.Minute) // the restarted process's clock is behind
			restarted := attached(t, st, time.Hour, clock)
			if err := restarted.Append(ctx, entries(30, 5)); err != nil {
				t.Fatal(err)
			}
			head, _ := restarted.Read(ctx, nil, 0, 0)
			if head.Last.Compare(oldLast) <= 0 {
				t.Fatalf("restarted log's head %s is not after the old run's %s", head.Last, oldLast)
			}
			seen, _ := readAll(t, restarted, cursor)
			if len(seen) != 23 {
				t.Fatalf("resumed after the 12th: %v, want the 18 unread and the 5 new", seen)
			}
			for i, n := range seen {
				if n != 12+i {
					t.Fatalf("resumed entries %v: gap, duplicate or out of order at %d", seen, i)
				}
			}
			if all, _ := readAll(t, restarted, start); len(all) != 35 {
				t.Errorf("from the start: %d entries, want 35", len(all))
			}

			// Two hours on, the old run's entries are beyond the retention.
			now = now.Add(2 * time.Hour)
			if err := restarted.Append(ctx, entries(35, 1)); err != nil {
				t.Fatal(err)
			}
			page, _ := restarted.Read(ctx, &cursor, 100, 0)
			if len(page.Entries) != 1 || page.Oldest == nil || page.Oldest.Compare(cursor) <= 0 {
				t.Fatalf("beyond the retention: %d entries, oldest %v; want only the newest and an oldest after the cursor", len(page.Entries), page.Oldest)
			}
		})
	}
}

// TestMemoryStoreConcurrent (-race): readers resuming from the start of a restarted log
// (the store's part, then memory's) while another goroutine appends see every entry once,
// in order: entries appended but not yet in the store are taken from memory.
func TestMemoryStoreConcurrent(t *testing.T) {
	ctx := context.Background()
	st := openStore(t, "postgres")
	first := attached(t, st, 0, nil)
	if err := first.Append(ctx, entries(0, 50)); err != nil {
		t.Fatal(err)
	}
	m := attached(t, st, 0, nil) // restarted: memory empty, 50 entries in the store
	const batches = 40
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < batches; i++ {
			if err := m.Append(ctx, entries(50+i*5, 5)); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for r := 0; r < 4; r++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var seen []int
			pos := contract.Position{}
			for len(seen) < 50+batches*5 {
				more, last := readAll(t, m, pos)
				seen, pos = append(seen, more...), last
			}
			for i, n := range seen {
				if n != i {
					t.Errorf("reader saw %d at %d: gap, duplicate or disorder", n, i)
					return
				}
			}
		}()
	}
	wg.Wait()
	<-done
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
