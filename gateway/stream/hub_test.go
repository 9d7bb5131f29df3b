package stream

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// logSource is an in-test service log (the service side is tested with its real logs in
// services/runtime/live); here it only feeds the hub.
type logSource struct {
	// base is added to every position's milliseconds (0: positions 1, 2, 3, ...).
	base   uint64
	mu     sync.Mutex
	events []contract.Event
	notify chan struct{}
}

// String is the cursor's opaque id form, as a stream writes it.
func (c Cursor) String() string {
	var e cursorEncoder
	return string(e.append(nil, c))
}

func newLogSource() *logSource { return &logSource{notify: make(chan struct{})} }

func (l *logSource) add(n int, sensor func(i int) string) {
	l.mu.Lock()
	for i := 0; i < n; i++ {
		k := len(l.events) + 1
		l.events = append(l.events, contract.Event{Pos: fmt.Sprintf("%d-0", l.base+uint64(k)), SensorID: sensor(k), ExternalID: "X",
			Reading: json.RawMessage(fmt.Sprintf(`{"n":%d}`, k))})
	}
	close(l.notify)
	l.notify = make(chan struct{})
	l.mu.Unlock()
}

func (l *logSource) Events(ctx context.Context, after string, limit int, wait time.Duration) (contract.EventsPage, error) {
	for {
		l.mu.Lock()
		last := fmt.Sprintf("%d-0", l.base+uint64(len(l.events)))
		if after == "" {
			l.mu.Unlock()
			return contract.EventsPage{Last: last}, nil
		}
		p, err := contract.ParsePosition(after)
		if err != nil {
			l.mu.Unlock()
			return contract.EventsPage{}, err
		}
		if i := int(max(p.MS, l.base) - l.base); i < len(l.events) {
			evs := append([]contract.Event(nil), l.events[i:min(len(l.events), i+limit)]...)
			l.mu.Unlock()
			return contract.EventsPage{Events: evs, Last: last, Oldest: fmt.Sprintf("%d-0", l.base+1)}, nil
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

// TestHubFanOutConcurrent: subscribers joining and leaving while events flow each get,
// in order and once, every matching event after their start position; a subscriber that
// does not read is dropped without holding up the others. Run with -race.
func TestHubFanOutConcurrent(t *testing.T) {
	src := newLogSource()
	h := NewHub(HubOptions{Sources: map[string]Source{"ocean": src}, Buffer: 1024, Wait: 200 * time.Millisecond})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go h.Run(ctx)
	<-h.Ready("ocean")

	sensor := func(i int) string { return fmt.Sprintf("s%d", i%4) }
	stuck, _, err := h.Subscribe([]string{"ocean"}, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	const subscribers, total = 16, 2000
	var wg sync.WaitGroup
	errs := make(chan error, subscribers)
	for i := 0; i < subscribers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := sensor(i)
			sub, heads, err := h.Subscribe([]string{"ocean"}, func(s string) bool { return s == want })
			if err != nil {
				errs <- err
				return
			}
			defer sub.Close()
			next := int(heads["ocean"].MS) + 1
			for next%4 != i%4 {
				next++
			}
			for next <= total {
				select {
				case e := <-sub.C:
					if int(e.Pos.MS) != next || e.SensorID != want {
						errs <- fmt.Errorf("subscriber %d: got %s (%s), want %d", i, e.Pos, e.SensorID, next)
						return
					}
					next += 4
				case <-sub.Done():
					errs <- fmt.Errorf("subscriber %d dropped: %v", i, sub.Err())
					return
				case <-time.After(10 * time.Second):
					errs <- fmt.Errorf("subscriber %d waits for %d", i, next)
					return
				}
			}
		}()
	}
	for i := 0; i < total/100; i++ {
		src.add(100, sensor)
		time.Sleep(5 * time.Millisecond)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case <-stuck.Done():
		if stuck.Err() != ErrSlow {
			t.Errorf("the subscriber that never read ended with %v, want ErrSlow", stuck.Err())
		}
	default:
		t.Error("a subscriber that never read was not dropped")
	}
	h.Close()
	if _, _, err := h.Subscribe([]string{"ocean"}, func(string) bool { return true }); err != ErrShutdown {
		t.Errorf("subscribe after Close: %v", err)
	}
}

func TestCursorRoundTrip(t *testing.T) {
	c := Cursor{"ocean": {MS: 1795622859679, Seq: 56}, "weather": {MS: 1795622890476}}
	got, err := ParseCursor(c.String())
	if err != nil || len(got) != 2 || got["ocean"] != c["ocean"] || got["weather"] != c["weather"] {
		t.Fatalf("round trip: %v, %v", got, err)
	}
	for _, bad := range []string{"", "!!", "b2NlYW4", "eA", string(make([]byte, 2000))} {
		if _, err := ParseCursor(bad); err == nil {
			t.Errorf("ParseCursor(%q) accepted", bad)
		}
	}
}

// TestCursorEncoderReused: one stream's encoder, reused across events while the cursor
// moves and gains services, gives the text of the plain encoding every time.
func TestCursorEncoderReused(t *testing.T) {
	plain := func(c Cursor) string {
		keys := make([]string, 0, len(c))
		for k := range c {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+c[k].String())
		}
		return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(parts, ",")))
	}
	var e cursorEncoder
	c := Cursor{"weather": {MS: 5}}
	buf := []byte("id: ")
	for i := uint64(1); i < 50; i++ {
		switch i {
		case 10:
			c["airquality"] = contract.Position{MS: 1795622859679, Seq: 3}
		case 20:
			c["ocean"] = contract.Position{MS: 7}
		}
		c["weather"] = contract.Position{MS: 1795622890476 + i, Seq: i % 3}
		got := e.append(buf[:4], c)
		if want := "id: " + plain(c); string(got) != want {
			t.Fatalf("event %d: %q, want %q", i, got, want)
		}
		buf = got
	}
}
