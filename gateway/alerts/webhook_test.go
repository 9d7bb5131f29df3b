package alerts

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// received is one request the test receiver got.
type received struct {
	Headers map[string]string `json:"headers"`
	Body    string            `json:"body"`
	Secret  string            `json:"secret"`
	status  int
}

// receiver is a webhook endpoint whose answer to each request answer decides (a status,
// or 0 to hang until the sender gives up).
type receiver struct {
	mu     sync.Mutex
	got    []received
	secret string
	answer func(n int) int
	srv    *httptest.Server
	n      atomic.Int64
}

func newReceiver(t *testing.T, answer func(n int) int) *receiver {
	rc := &receiver{answer: answer}
	rc.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		status := rc.answer(int(rc.n.Add(1)))
		if status == 0 {
			<-r.Context().Done() // hang
			return
		}
		rc.mu.Lock()
		rc.got = append(rc.got, received{Headers: map[string]string{"webhook-id": r.Header.Get("webhook-id"),
			"webhook-timestamp": r.Header.Get("webhook-timestamp"), "webhook-signature": r.Header.Get("webhook-signature")},
			Body: string(body), Secret: rc.secret, status: status})
		rc.mu.Unlock()
		w.WriteHeader(status)
	}))
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) requests() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.got...)
}

// delivered: per webhook-id, the requests answered 2xx.
func (rc *receiver) delivered() map[string][]received {
	out := map[string][]received{}
	for _, r := range rc.requests() {
		if r.status >= 200 && r.status < 300 {
			out[r.Headers["webhook-id"]] = append(out[r.Headers["webhook-id"]], r)
		}
	}
	return out
}

// webhookEnv is one replica (evaluation and sender) on PostgreSQL with a rule whose
// webhook is rc; burst readings cross its threshold n times.
type webhookEnv struct {
	st   *Store
	log  *memLog
	rule Rule
	t0   time.Time
}

func newWebhookEnv(t *testing.T, rc *receiver, sender SenderOptions) *webhookEnv {
	t.Helper()
	cat := openCatalog(t, true)
	st := openStore(t, cat)
	r, err := CreateRequest{Name: "pm25", Target: Target{SensorIDs: []string{sensorA}},
		Condition: Condition{Parameter: "pm2_5_ug_per_m3", Op: OpAbove, Value: ptr(35)}, For: "PT0S", WebhookURL: rc.srv.URL + "/hook"}.validate()
	if err != nil {
		t.Fatal(err)
	}
	r, secret, err := st.CreateRule(context.Background(), "k1", r, 100)
	if err != nil {
		t.Fatal(err)
	}
	rc.secret = secret
	log := newMemLog()
	ctx, cancel := context.WithCancel(context.Background())
	stop := startReplica(t, ctx, st, log, LocalLeader{})
	sender.Store = st
	if sender.Guard.Allow == nil {
		sender.Guard = loopback
	}
	sender.Poll = 20 * time.Millisecond
	s := NewSender(sender)
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); stop(); <-done })
	waitCursor(t, st)
	return &webhookEnv{st: st, log: log, rule: r, t0: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
}

func (e *webhookEnv) burst(n int) {
	for i := 0; i < n; i++ {
		v := 40.0
		if i%2 == 1 {
			v = 20
		}
		e.log.add(sensorA, v, e.t0.Add(time.Duration(i)*time.Second))
	}
}

// checkNoneLost: every event reached the receiver with a 2xx, and a duplicate only ever
// carries the same webhook-id and the same body.
func checkNoneLost(t *testing.T, st *Store, rc *receiver, n int) map[string][]received {
	t.Helper()
	evs := waitEvents(t, st, "k1", n)
	if len(evs) != n {
		t.Fatalf("%d events, want %d", len(evs), n)
	}
	deadline := time.Now().Add(30 * time.Second)
	for len(rc.delivered()) < n && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	got := rc.delivered()
	for _, e := range evs {
		reqs := got[e.ID]
		if len(reqs) == 0 {
			t.Fatalf("event %s never delivered (%d of %d delivered)", e.ID, len(got), n)
		}
		for _, r := range reqs {
			var body Event
			if err := json.Unmarshal([]byte(r.Body), &body); err != nil || body.ID != e.ID || r.Body != reqs[0].Body {
				t.Fatalf("delivery of %s carries %s", e.ID, r.Body)
			}
		}
	}
	if len(got) != n {
		t.Fatalf("%d webhook-ids delivered, want the %d events' ids", len(got), n)
	}
	return got
}

// verifyWithReference checks every request's signature with the standardwebhooks package.
func verifyWithReference(t *testing.T, reqs []received) {
	t.Helper()
	dir := testenv.Node(t, testenv.NodePackage{Dir: filepath.Join("..", "..", "scripts", "webhook-verify"), Files: []string{"verify.mjs"},
		Needs: "the webhook signature test needs Node.js 20+ and npm"})
	in, err := json.Marshal(reqs)
	if err != nil {
		t.Fatal(err)
	}
	inFile := filepath.Join(t.TempDir(), "deliveries.json")
	if err := writeFile(inFile, in); err != nil {
		t.Fatal(err)
	}
	out, errOut, err := testenv.RunIn(dir, time.Minute, nil, "sh", "-c", "node verify.mjs < "+inFile)
	if err != nil {
		t.Fatalf("standardwebhooks refused a delivery: %v\n%s%s", err, out, errOut)
	}
	if want := "verified " + itoa(len(reqs)); strings.TrimSpace(string(out)) != want {
		t.Fatalf("verifier said %q, want %q", out, want)
	}
}

func TestWebhooksVerifyWithTheReferenceImplementation(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(int) int { return http.StatusNoContent })
	e := newWebhookEnv(t, rc, SenderOptions{})
	e.burst(20)
	got := checkNoneLost(t, e.st, rc, 20)
	verifyWithReference(t, rc.requests())
	for id, reqs := range got {
		if len(reqs) != 1 {
			t.Errorf("event %s delivered %d times to a receiver that never failed", id, len(reqs))
		}
	}
	// A forged body does not verify: the check is not vacuous.
	bad := rc.requests()[:1]
	bad[0].Body = strings.Replace(bad[0].Body, `"state":"`, `"state":"not `, 1)
	dir := testenv.Node(t, testenv.NodePackage{Dir: filepath.Join("..", "..", "scripts", "webhook-verify"), Files: []string{"verify.mjs"}})
	in, _ := json.Marshal(bad)
	inFile := filepath.Join(t.TempDir(), "forged.json")
	if err := writeFile(inFile, in); err != nil {
		t.Fatal(err)
	}
	if _, _, err := testenv.RunIn(dir, time.Minute, nil, "sh", "-c", "node verify.mjs < "+inFile); err == nil {
		t.Fatal("the reference implementation accepted a forged body")
	}
}

// TestReceiverFailsThenRecovers: a receiver answering 500 for its first 30 requests gets
// every event once it recovers; the delivery log shows the retries.
func TestReceiverFailsThenRecovers(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int) int {
		if n <= 30 {
			return http.StatusInternalServerError
		}
		return http.StatusOK
	})
	e := newWebhookEnv(t, rc, SenderOptions{Backoff: 50 * time.Millisecond})
	e.burst(20)
	checkNoneLost(t, e.st, rc, 20)
	verifyWithReference(t, rc.requests())
	log, err := e.st.Deliveries(context.Background(), "k1", e.rule.ID, MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	var retries, delivered int
	for _, d := range log {
		switch d.Outcome {
		case "retry":
			retries++
			if d.Status != 500 || !strings.Contains(d.Error, "500") {
				t.Errorf("retry logged as %+v", d)
			}
		case "delivered":
			delivered++
		}
	}
	if retries != 30 || delivered < 20 {
		t.Fatalf("delivery log: %d retries, %d delivered; want 30 and at least 20", retries, delivered)
	}
}

// TestReceiverHangs: a receiver that never answers its first requests costs each attempt
// the timeout, then every event is delivered.
func TestReceiverHangs(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(n int) int {
		if n <= 5 {
			return 0
		}
		return http.StatusOK
	})
	e := newWebhookEnv(t, rc, SenderOptions{Timeout: 300 * time.Millisecond, Backoff: 50 * time.Millisecond, Workers: 4})
	e.burst(10)
	checkNoneLost(t, e.st, rc, 10)
	log, err := e.st.Deliveries(context.Background(), "k1", e.rule.ID, MaxLimit)
	if err != nil {
		t.Fatal(err)
	}
	hung := 0
	for _, d := range log {
		if d.Outcome == "retry" && strings.Contains(d.Error, "no answer within 300ms") {
			hung++
		}
	}
	if hung != 5 {
		t.Fatalf("%d attempts logged as hung, want 5: %+v", hung, log)
	}
}

// TestGoneDisablesTheWebhook: 410 stops deliveries to the rule and says so on the rule.
func TestGoneDisablesTheWebhook(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(int) int { return http.StatusGone })
	e := newWebhookEnv(t, rc, SenderOptions{Backoff: 50 * time.Millisecond})
	e.burst(6)
	waitEvents(t, e.st, "k1", 6)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		r, err := e.st.Rule(context.Background(), "k1", e.rule.ID)
		if err != nil {
			t.Fatal(err)
		}
		if r.WebhookDisabled != nil {
			// Attempts already under way when the first 410 came back finish; none starts
			// after it.
			before := len(rc.requests())
			time.Sleep(300 * time.Millisecond)
			if n := len(rc.requests()); n != before || n > 6 {
				t.Fatalf("%d requests, %d when the webhook was disabled: want none after", n, before)
			}
			var left int64
			if err := e.st.db.Raw("SELECT count(*) FROM alert_outbox").Scan(&left).Error; err != nil || left != 0 {
				t.Fatalf("outbox holds %d rows after 410 (%v)", left, err)
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the webhook was not disabled after 410")
}

// TestDialTimeGuard: a rule whose target passed the check at creation but resolves to a
// refused address at delivery (DNS rebinding) is refused by the dialer.
func TestDialTimeGuard(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(int) int { return http.StatusOK })
	e := newWebhookEnv(t, rc, SenderOptions{Guard: Guard{Allow: []netip.Prefix{}}, Backoff: time.Hour})
	e.burst(1)
	waitEvents(t, e.st, "k1", 1)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		log, err := e.st.Deliveries(context.Background(), "k1", e.rule.ID, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(log) > 0 {
			if !strings.Contains(log[0].Error, "loopback, private, link-local or metadata") || len(rc.requests()) != 0 {
				t.Fatalf("delivery to loopback without the allowlist: %+v, %d requests", log[0], len(rc.requests()))
			}
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("no delivery attempt logged")
}

// TestReplaySendsTheSameWebhookID: a replayed event is delivered again with its id.
func TestReplaySendsTheSameWebhookID(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(int) int { return http.StatusOK })
	e := newWebhookEnv(t, rc, SenderOptions{})
	e.burst(1)
	checkNoneLost(t, e.st, rc, 1)
	evs := allEvents(t, e.st, "k1")
	if _, err := e.st.Replay(context.Background(), "k1", evs[0].ID); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(rc.requests()) < 2 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	reqs := rc.requests()
	if len(reqs) != 2 || reqs[1].Headers["webhook-id"] != evs[0].ID || reqs[1].Body != reqs[0].Body {
		t.Fatalf("replay: %+v", reqs)
	}
	if _, err := e.st.Replay(context.Background(), "k2", evs[0].ID); err == nil {
		t.Fatal("another key replayed the event")
	}
}

// TestSecretRotationOverlaps: after a rotation with a grace, each delivery verifies with
// the new secret and with the old one (standardwebhooks accepts any of the signatures);
// once the grace is over, only the new one signs.
func TestSecretRotationOverlaps(t *testing.T) {
	t.Parallel()
	rc := newReceiver(t, func(int) int { return http.StatusOK })
	e := newWebhookEnv(t, rc, SenderOptions{})
	old := rc.secret
	secret, until, err := e.st.RotateSecret(context.Background(), "k1", e.rule.ID, time.Hour)
	if err != nil || !strings.HasPrefix(secret, "whsec_") || secret == old || until.Before(time.Now().Add(59*time.Minute)) {
		t.Fatalf("rotate: %q %s %v", secret, until, err)
	}
	e.burst(2)
	checkNoneLost(t, e.st, rc, 2)
	var both []received
	for _, r := range rc.requests() {
		if n := len(strings.Fields(r.Headers["webhook-signature"])); n != 2 {
			t.Fatalf("%d signatures during the overlap, want 2", n)
		}
		r.Secret = old
		both = append(both, r)
		r.Secret = secret
		both = append(both, r)
	}
	verifyWithReference(t, both)

	if _, _, err := e.st.RotateSecret(context.Background(), "k1", e.rule.ID, 0); err != nil {
		t.Fatal(err)
	}
	e.t0 = e.t0.Add(time.Hour)
	e.burst(2)
	deadline := time.Now().Add(10 * time.Second)
	for len(rc.requests()) < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	reqs := rc.requests()
	if len(reqs) != 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	for _, r := range reqs[2:] {
		if n := len(strings.Fields(r.Headers["webhook-signature"])); n != 1 {
			t.Fatalf("%d signatures after a rotation without grace, want 1", n)
		}
	}
}
