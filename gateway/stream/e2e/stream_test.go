package e2e

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"
)

// storedReading is a reading as the service's readings page serves it.
type storedReading struct {
	ID           string          `json:"id"`
	Timestamp    time.Time       `json:"timestamp"`
	Measurements json.RawMessage `json:"measurements"`
}

// storedBetween lists the readings of every station of svc whose time is in [since, until).
func storedBetween(t *testing.T, svc *service, since, until time.Time) map[string]storedReading {
	t.Helper()
	var list struct {
		Sensors []struct {
			ExternalID string `json:"external_id"`
		} `json:"sensors"`
	}
	if r := get(t, svc.url+"/v1/sensors?limit=1000", "X-Internal-Token", internalToken); r.status != 200 || json.Unmarshal(r.body, &list) != nil {
		t.Fatalf("%s station list: %d %s", svc.id, r.status, r.body)
	}
	out := map[string]storedReading{}
	for _, s := range list.Sensors {
		var page struct {
			SensorID string          `json:"sensor_id"`
			Readings []storedReading `json:"readings"`
		}
		q := url.Values{"since": {since.UTC().Format(time.RFC3339Nano)}, "until": {until.UTC().Format(time.RFC3339Nano)}, "limit": {"1000"}}
		r := get(t, svc.url+"/v1/sensors/"+url.PathEscape(s.ExternalID)+"/readings?"+q.Encode(), "X-Internal-Token", internalToken)
		if r.status != 200 || json.Unmarshal(r.body, &page) != nil {
			t.Fatalf("%s readings of %s: %d %s", svc.id, s.ExternalID, r.status, r.body)
		}
		for _, rd := range page.Readings {
			out[rd.ID] = rd
		}
	}
	return out
}

// TestStreamResumeAcrossGateways: a client reads the area stream from gateway A; A is
// killed; the client reconnects to gateway B with Last-Event-ID and, across both
// connections, receives every reading stored meanwhile exactly once, each equal to the
// stored reading.
func TestStreamResumeAcrossGateways(t *testing.T) {
	st := startStack(t, stackOptions{services: []string{"ocean", "weather"}, simStations: 300, redis: true})
	a := st.startGateway(t, "gateway-a", 300)
	b := st.startGateway(t, "gateway-b", 300)

	tOpen := time.Now()
	s1, r := openStream(t, a.url+"/api/v1/readings/stream")
	if s1 == nil {
		t.Fatalf("open on A: %d %s", r.status, r.body)
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q", ct)
	}
	first, _, _ := s1.collect(t, 30*time.Second)
	for len(first) == 0 && time.Since(tOpen) < 90*time.Second {
		more, _, _ := s1.collect(t, 10*time.Second)
		first = append(first, more...)
	}
	if len(first) == 0 {
		t.Fatal("no reading on A within 90 s of opening")
	}
	a.p.Kill()
	rest, _, ended := s1.collect(t, 5*time.Second)
	first = append(first, rest...)
	if !ended {
		t.Fatal("the stream from A did not end when A was killed")
	}
	lastID := first[len(first)-1].id
	time.Sleep(10 * time.Second) // readings stored while the client is away

	s2, r := openStream(t, b.url+"/api/v1/readings/stream", "Last-Event-ID", lastID)
	if s2 == nil {
		t.Fatalf("resume on B: %d %s", r.status, r.body)
	}
	// The simulation times its readings on whole minutes, so the comparison window below
	// (20 s after opening to 25 s before the end) must be longer than a minute to hold
	// one: read from B until at least 115 s after opening.
	second, _, _ := s2.collect(t, max(45*time.Second, 115*time.Second-time.Since(tOpen)))
	s2.close()
	tEnd := time.Now()

	got := deliveredOnce(t, append(first, second...))
	// Every reading stored while the client followed, in either connection or the gap,
	// arrived: those timed 20 s after opening up to 25 s before the end (a simulated
	// reading is stored within 15 s of its time).
	stored := map[string]storedReading{}
	all := map[string]storedReading{}
	for _, svc := range st.services {
		for id, rd := range storedBetween(t, svc, tOpen.Add(20*time.Second), tEnd.Add(-25*time.Second)) {
			stored[id] = rd
		}
		for id, rd := range storedBetween(t, svc, tOpen.Add(-time.Hour), tEnd.Add(time.Hour)) {
			all[id] = rd
		}
	}
	missing := checkDelivered(t, got, stored, all)
	t.Logf("A delivered %d, B %d (replay and live); %d stored in the checked window, %d missing", len(first), len(second), len(stored), missing)
}

// deliveredOnce decodes the reading events of both connections of a resumed stream by id,
// failing the test for a reading delivered twice.
func deliveredOnce(t *testing.T, frames []frame) map[string]readingEvent {
	t.Helper()
	got := map[string]readingEvent{}
	for _, f := range frames {
		var e readingEvent
		if err := json.Unmarshal([]byte(f.data), &e); err != nil {
			t.Fatalf("event data %q: %v", f.data, err)
		}
		if _, dup := got[e.ID]; dup {
			t.Errorf("reading %s (%s at %s) delivered twice", e.ID, e.ExternalID, e.Timestamp)
		}
		got[e.ID] = e
	}
	return got
}

// checkDelivered asserts that every reading stored in the checked window arrived (stored)
// and that every streamed reading equals its stored self (all: a wider window); it returns
// how many stored readings were missing.
func checkDelivered(t *testing.T, got map[string]readingEvent, stored, all map[string]storedReading) int {
	t.Helper()
	if len(stored) == 0 {
		t.Fatalf("no reading stored in the window: nothing to compare (streamed %d)", len(got))
	}
	missing := 0
	for id, rd := range stored {
		if _, ok := got[id]; !ok {
			if missing++; missing <= 5 {
				t.Errorf("stored reading %s at %s never arrived", id, rd.Timestamp)
			}
		}
	}
	for id, e := range got {
		rd, ok := all[id]
		if !ok {
			t.Errorf("streamed reading %s (%s) is not stored", id, e.ExternalID)
			continue
		}
		if ts, _ := time.Parse(time.RFC3339Nano, e.Timestamp); !ts.Equal(rd.Timestamp) || !jsonEqual(e.Measurements, rd.Measurements) {
			t.Errorf("streamed %s differs from stored: %s %s vs %s %s", id, e.Timestamp, e.Measurements, rd.Timestamp, rd.Measurements)
		}
	}
	return missing
}

// TestStreamLimits: the per-key cap (429 beyond it, the slot back when a stream closes),
// heartbeats, a slow client disconnected without holding up others, and SIGTERM ending
// the streams with a last comment.
func TestStreamLimits(t *testing.T) {
	st := startStack(t, stackOptions{services: []string{"weather"}, simStations: 100})
	g := st.startGateway(t, "gateway", 100, "STREAM_MAX_PER_KEY=2", "STREAM_BUFFER=4", "STREAM_HEARTBEAT=1s")
	path := g.url + "/api/v1/readings/stream"

	// Every stream below resumes from the start of weather's log, so each replays the
	// burst of the service's first ingest (over a thousand readings, about 1.4 MB). The
	// cursor is crafted here: its form is the package's, opaque to clients.
	from := base64.RawURLEncoding.EncodeToString([]byte("weather=1-0"))
	fast, r := openStream(t, path, "Last-Event-ID", from)
	if fast == nil {
		t.Fatalf("open: %d %s", r.status, r.body)
	}
	second, r := openStream(t, path)
	if second == nil {
		t.Fatalf("second stream: %d %s", r.status, r.body)
	}
	if third, r := openStream(t, path); third != nil || r.status != 429 || !strings.Contains(string(r.body), `"rate_limited"`) {
		t.Fatalf("third stream of a key capped at 2: %d %s", r.status, r.body)
	}
	_, comments, _ := second.collect(t, 2500*time.Millisecond)
	if len(comments) < 2 {
		t.Errorf("%d comments in 2.5 s with a 1 s heartbeat", len(comments))
	}
	second.close()
	var again *sse
	for deadline := time.Now().Add(5 * time.Second); again == nil && time.Now().Before(deadline); {
		again, _ = openStream(t, path)
		time.Sleep(50 * time.Millisecond)
	}
	if again == nil {
		t.Fatal("the slot of a closed stream did not come back")
	}
	again.close()
	replayed, _, _ := fast.collect(t, 100*time.Millisecond)

	// A slow client: a tiny receive window, and it never reads.
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { _ = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	conn, err := d.Dial("tcp", strings.TrimPrefix(g.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/readings/stream HTTP/1.1\r\nHost: %s\r\nx-api-key: %s\r\nLast-Event-ID: %s\r\n\r\n", strings.TrimPrefix(g.url, "http://"), apiKey, from)
	// While it stalls, the fast stream keeps receiving; the slow one is cut (its slot comes
	// back, which the cap of 2 shows).
	start := time.Now()
	freed := false
	for time.Since(start) < 60*time.Second && !freed {
		evs, _, _ := fast.collect(t, time.Second)
		replayed = append(replayed, evs...)
		if s, _ := openStream(t, path); s != nil {
			freed = true
			s.close()
		}
	}
	if !freed {
		t.Fatal("the slow client still holds its stream after 60 s")
	}
	if len(replayed) < 100 {
		t.Errorf("the fast stream replayed %d readings, want the first ingest's burst", len(replayed))
	}
	_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
	sc := bufio.NewScanner(conn)
	for sc.Scan() {
	}
	if err := sc.Err(); err != nil {
		t.Errorf("the slow client's connection was not closed by the gateway: %v", err)
	}
	t.Logf("slow client cut after %s; the fast stream got %d readings", time.Since(start).Round(time.Second), len(replayed))

	// SIGTERM: the open stream gets a last comment and ends.
	g.p.Signal(t, syscall.SIGTERM)
	_, comments, ended := fast.collect(t, 10*time.Second)
	if !ended || len(comments) == 0 || !strings.Contains(comments[len(comments)-1].comment, "shutting down") {
		t.Errorf("after SIGTERM: ended %v, comments %+v", ended, comments)
	}
}
