package e2e

import (
	"strings"
	"testing"
	"time"
)

// TestStreamCapAcrossGateways: the per-key cap holds across two gateway processes sharing
// Redis (docs/live.md "Limits"): with a cap of 2, one stream on each replica leaves no
// third on either; a closed stream's slot comes back on the other replica; the streams of
// a replica killed without closing them expire with their lease (three heartbeats) and
// the other replica can take the slots.
func TestStreamCapAcrossGateways(t *testing.T) {
	st := startStack(t, stackOptions{services: []string{"weather"}, simStations: 100})
	extra := []string{"STREAM_MAX_PER_KEY=2", "STREAM_HEARTBEAT=1s"}
	a := st.startGateway(t, "gateway-a", 100, extra...)
	b := st.startGateway(t, "gateway-b", 100, extra...)
	const path = "/api/v1/readings/stream"

	onA, r := openStream(t, a.url+path)
	if onA == nil {
		t.Fatalf("open on A: %d %s", r.status, r.body)
	}
	onB, r := openStream(t, b.url+path)
	if onB == nil {
		t.Fatalf("open on B: %d %s", r.status, r.body)
	}
	for _, g := range []*gateway{a, b} {
		if s, r := openStream(t, g.url+path); s != nil || r.status != 429 || !strings.Contains(string(r.body), `"rate_limited"`) || r.header.Get("Retry-After") == "" {
			t.Fatalf("a third stream of a key capped at 2 (one open on each replica) on %s: %d %s", g.url, r.status, r.body)
		}
	}
	onB.close()
	var again *sse
	for deadline := time.Now().Add(10 * time.Second); again == nil && time.Now().Before(deadline); {
		again, _ = openStream(t, a.url+path)
		time.Sleep(50 * time.Millisecond)
	}
	if again == nil {
		t.Fatal("the slot of the stream closed on B did not come back on A")
	}

	// A dies holding both slots; they expire and B takes them.
	a.p.Kill()
	var took []*sse
	for deadline := time.Now().Add(60 * time.Second); len(took) < 2 && time.Now().Before(deadline); {
		if s, r := openStream(t, b.url+path); s != nil {
			took = append(took, s)
		} else if r.status != 429 {
			t.Fatalf("open on B while A's slots expire: %d %s", r.status, r.body)
		} else {
			time.Sleep(200 * time.Millisecond)
		}
	}
	if len(took) < 2 {
		t.Fatalf("60 s after A was killed B holds %d streams; A's leased slots never expired", len(took))
	}
	if s, r := openStream(t, b.url+path); s != nil || r.status != 429 {
		t.Errorf("a third stream on B: %d, want 429", r.status)
	}
	for _, s := range took {
		s.close()
	}
}

// TestStreamResumeAfterServiceRestart: without Redis (the service's log in process, its
// copy in the store) a client resumes with Last-Event-ID after the service was restarted
// and receives every reading stored meanwhile exactly once, each equal to the stored one.
func TestStreamResumeAfterServiceRestart(t *testing.T) {
	st := startStack(t, stackOptions{services: []string{"weather"}, simStations: 100})
	g := st.startGateway(t, "gateway", 100)
	svc := st.services["weather"]
	const path = "/api/v1/readings/stream"

	tOpen := time.Now()
	s1, r := openStream(t, g.url+path)
	if s1 == nil {
		t.Fatalf("open: %d %s", r.status, r.body)
	}
	var first []frame
	for len(first) == 0 && time.Since(tOpen) < 90*time.Second {
		more, _, _ := s1.collect(t, 10*time.Second)
		first = append(first, more...)
	}
	if len(first) == 0 {
		t.Fatal("no reading within 90 s of opening")
	}
	more, _, _ := s1.collect(t, 5*time.Second)
	first = append(first, more...)
	s1.close()
	lastID := first[len(first)-1].id

	time.Sleep(20 * time.Second) // readings stored and logged while the client is away
	svc.restart(t)               // ... then the log's memory is gone

	s2, r := openStream(t, g.url+path, "Last-Event-ID", lastID)
	if s2 == nil {
		t.Fatalf("resume: %d %s", r.status, r.body)
	}
	// As in TestStreamResumeAcrossGateways: the comparison window must hold a whole minute
	// (simulated readings are timed on whole minutes).
	second, comments, _ := s2.collect(t, max(45*time.Second, 115*time.Second-time.Since(tOpen)))
	s2.close()
	tEnd := time.Now()
	for _, c := range comments {
		if strings.Contains(c.comment, "older than the retained log") {
			t.Errorf("resume after the restart says %q", c.comment)
		}
	}

	got := deliveredOnce(t, append(first, second...))
	stored := storedBetween(t, svc, tOpen.Add(20*time.Second), tEnd.Add(-25*time.Second))
	all := storedBetween(t, svc, tOpen.Add(-time.Hour), tEnd.Add(time.Hour))
	missing := checkDelivered(t, got, stored, all)
	t.Logf("before the restart %d, after %d (replay and live); %d stored in the checked window, %d missing", len(first), len(second), len(stored), missing)
}
