package alerts

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"gorm.io/gorm"
)

// addEvent stores one event of key (as the evaluator does) and returns its id.
func addEvent(t *testing.T, st *Store, key, sensor string) string {
	t.Helper()
	r := &Rule{ID: "r", keyID: key}
	ev := newEvent(r, sensor, StateFiring, "pm25", ptr(40), time.Now(), time.Now())
	if err := st.db.Transaction(func(tx *gorm.DB) error {
		return writeEffects(tx, time.Now().UnixMilli(), nil, []pendingEvent{{Event: *ev, keyID: key}})
	}); err != nil {
		t.Fatal(err)
	}
	return ev.ID
}

type sseEvent struct{ id, data string }

// openSSE opens the alert stream and returns its events as they come.
func openSSE(t *testing.T, e *apiEnv, key, lastID string) (<-chan sseEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/alerts/stream", nil)
	req.Header.Set("x-api-key", key)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("stream: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 100)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var cur sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				cur.id = line[4:]
			case strings.HasPrefix(line, "data: "):
				cur.data = line[6:]
			case line == "" && cur.data != "":
				out <- cur
				cur = sseEvent{}
			}
		}
	}()
	return out, cancel
}

func next(t *testing.T, c <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case e := <-c:
		return e
	case <-time.After(10 * time.Second):
		t.Fatal("no event within 10 s")
	}
	return sseEvent{}
}

// TestAlertStreamResumes: a stream sends the key's new events (not another key's), and a
// stream opened with Last-Event-ID sends every event after it, once.
func TestAlertStreamResumes(t *testing.T) {
	eachDialect(t, func(t *testing.T, pg bool) {
		e := newAPI(t, pg, Quotas{})
		key, keyID := e.key(t, "frank", "")
		_, otherID := e.key(t, "gina", "")
		old := addEvent(t, e.st, keyID, sensorA) // before the stream: not sent
		s1, stop1 := openSSE(t, e, key, "")
		time.Sleep(200 * time.Millisecond)
		addEvent(t, e.st, otherID, sensorA)
		want1 := addEvent(t, e.st, keyID, sensorA)
		got := next(t, s1)
		if !strings.Contains(got.data, want1) || strings.Contains(got.data, old) {
			t.Fatalf("first event %+v, want %s", got, want1)
		}
		stop1()
		want2 := addEvent(t, e.st, keyID, sensorA) // while away
		s2, stop2 := openSSE(t, e, key, got.id)
		defer stop2()
		if g := next(t, s2); !strings.Contains(g.data, want2) {
			t.Fatalf("resumed with %+v, want %s", g, want2)
		}
		want3 := addEvent(t, e.st, keyID, sensorA)
		if g := next(t, s2); !strings.Contains(g.data, want3) {
			t.Fatalf("then %+v, want %s", g, want3)
		}
		req, _ := http.NewRequest(http.MethodGet, e.url+"/alerts/stream", nil)
		req.Header.Set("x-api-key", key)
		req.Header.Set("Last-Event-ID", "yesterday")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("Last-Event-ID yesterday: %d, want 400", resp.StatusCode)
		}
	})
}
