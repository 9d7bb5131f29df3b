package lease_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/internal/providerdata"
)

// poll is one provider request the fake provider saw: which replica (its User-Agent) began
// a poll cycle of which provider, and when.
type poll struct {
	replica, provider string
	at                time.Time
}

// providerServer serves the recorded NDBC and CO-OPS payloads under the live URL layout
// and records who starts each poll cycle (activestations.xml for NDBC, the water
// temperature product for CO-OPS). It stands in for the providers' hosts, which a test
// must not call.
type providerServer struct {
	mu    sync.Mutex
	polls []poll
}

func (p *providerServer) handler(t *testing.T) http.Handler {
	dir := providerdata.Dir()
	if dir == "" {
		t.Fatal("recorded provider payloads (testdata/providers) not found")
	}
	file := func(rel string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, rel))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	stations, buoy := file("ndbc/activestations.xml"), file("ndbc/41002.txt")
	water := file("coops/datagetter_8723970_water_temperature_metric_20140927-20140928.json")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		record := func(provider string) {
			p.mu.Lock()
			p.polls = append(p.polls, poll{replica: r.UserAgent(), provider: provider, at: time.Now()})
			p.mu.Unlock()
		}
		switch {
		case r.URL.Path == "/activestations.xml":
			record("noaa-ndbc")
			_, _ = w.Write(stations)
		case r.URL.Path == "/data/realtime2/41002.txt":
			_, _ = w.Write(buoy)
		case r.URL.Path == "/api/prod/datagetter":
			if r.URL.Query().Get("product") == "water_temperature" {
				record("noaa-coops")
			}
			_, _ = w.Write(water)
		default:
			http.NotFound(w, r)
		}
	})
}

func (p *providerServer) snapshot() []poll {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]poll(nil), p.polls...)
}

type replica struct {
	name string
	addr string
	*testenv.Process
}

// TestKillHolderFailsOver runs three real ocean service processes on one PostgreSQL
// readings database, polling a local stand-in for NDBC and CO-OPS every 4 s, and kills
// the holder of NDBC's lease with SIGKILL (no shutdown, no unlock: PostgreSQL frees the
// lock when the connection drops). Before and after the kill, each provider is polled by
// exactly one replica (no reading fetched and written twice), and the next poll after the
// kill comes within one poll interval.
func TestKillHolderFailsOver(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three service processes")
	}
	const interval = 4 * time.Second
	db := testenv.Postgres(t)
	bin := filepath.Join(t.TempDir(), "ocean")
	build := exec.Command("go", "build", "-o", bin, "github.com/sensorgate/sensorgate/services/cmd/ocean")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ocean: %v\n%s", err, out)
	}
	prov := &providerServer{}
	srv := httptest.NewServer(prov.handler(t))
	defer srv.Close()

	const token = "lease-test-token"
	var reps []*replica
	for i := range 3 {
		r := &replica{name: fmt.Sprintf("replica-%d", i), addr: testenv.FreeAddr(t)}
		r.Process = testenv.StartProcess(t, testenv.Command{Name: r.name, Path: bin, Stop: syscall.SIGTERM, StopWithin: 20 * time.Second,
			Env: []string{"SERVICE_ADDR=" + r.addr, "READINGS_DATABASE_URL=" + db, "SOURCE_MODE=live", "INTERNAL_TOKEN=" + token,
				"USER_AGENT=" + r.name, "LOG_LEVEL=info",
				"NOAA_NDBC_BASE_URL=" + srv.URL, "NOAA_NDBC_STATIONS=41002", "NOAA_NDBC_POLL_INTERVAL=" + interval.String(),
				"NOAA_COOPS_BASE_URL=" + srv.URL, "NOAA_COOPS_STATIONS=8723970", "NOAA_COOPS_POLL_INTERVAL=" + interval.String()}})
		reps = append(reps, r)
		if i == 0 {
			// The first replica migrates the fresh database before the others start:
			// replicas racing on a fresh database's first migration is not the lease's
			// matter (docs/deploy.md, "Not covered here").
			waitReady(t, r)
		}
	}
	for _, r := range reps {
		waitReady(t, r)
	}

	// Three cycles with every replica up.
	time.Sleep(3 * interval)
	before := prov.snapshot()
	holders := map[string]string{}
	for _, provider := range []string{"noaa-ndbc", "noaa-coops"} {
		holders[provider] = onlyReplica(t, "before the kill", before, provider)
	}
	checkHealth(t, reps, holders)

	var victim *replica
	for _, r := range reps {
		if r.name == holders["noaa-ndbc"] {
			victim = r
		}
	}
	if victim == nil {
		t.Fatalf("NDBC holder %q is none of the replicas", holders["noaa-ndbc"])
	}
	killedAt := time.Now()
	victim.Kill()
	time.Sleep(3 * interval)

	after := prov.snapshot()[len(before):]
	var sinceKill []poll
	for _, p := range after {
		if p.at.After(killedAt) {
			sinceKill = append(sinceKill, p)
		}
	}
	newHolder := onlyReplica(t, "after the kill", sinceKill, "noaa-ndbc")
	if newHolder == victim.name {
		t.Fatalf("the killed replica %s still polls", victim.name)
	}
	// The holder's last cycle started at most one interval before the kill, so a takeover
	// within one interval of the kill leaves no gap longer than one poll interval beyond
	// the regular one.
	for _, p := range sinceKill {
		if p.provider == "noaa-ndbc" {
			if d := p.at.Sub(killedAt); d > interval {
				t.Errorf("first NDBC poll %v after the kill, want within one poll interval (%v)", d.Round(time.Millisecond), interval)
			} else {
				t.Logf("NDBC taken over by %s %v after the kill of %s", newHolder, d.Round(time.Millisecond), victim.name)
			}
			break
		}
	}
	if holders["noaa-coops"] != victim.name {
		if got := onlyReplica(t, "after the kill", sinceKill, "noaa-coops"); got != holders["noaa-coops"] {
			t.Errorf("CO-OPS moved from %s to %s though its holder lives", holders["noaa-coops"], got)
		}
	}
	var alive []*replica
	for _, r := range reps {
		if r != victim {
			alive = append(alive, r)
		}
	}
	holders["noaa-ndbc"] = newHolder
	if holders["noaa-coops"] == victim.name {
		holders["noaa-coops"] = onlyReplica(t, "after the kill", sinceKill, "noaa-coops")
	}
	checkHealth(t, alive, holders)
}

// onlyReplica fails unless exactly one replica started cycles of provider in polls, with
// cycles no closer than half an interval (two holders would interleave theirs).
func onlyReplica(t *testing.T, when string, polls []poll, provider string) string {
	t.Helper()
	who := map[string]int{}
	var last time.Time
	for _, p := range polls {
		if p.provider != provider {
			continue
		}
		who[p.replica]++
		if !last.IsZero() && p.at.Sub(last) < time.Second {
			t.Errorf("%s: two %s cycles %v apart", when, provider, p.at.Sub(last))
		}
		last = p.at
	}
	if len(who) != 1 {
		t.Fatalf("%s: %s polled by %v, want exactly one replica", when, provider, who)
	}
	for r := range who {
		return r
	}
	return ""
}

func waitReady(t *testing.T, r *replica) {
	t.Helper()
	r.WaitReady(t, "http://"+r.addr+contract.PathReadyz, 60*time.Second)
}

// checkHealth: each replica's health says it holds exactly the leases it polls for, and
// stands by (healthy, not degraded) for the others.
func checkHealth(t *testing.T, reps []*replica, holders map[string]string) {
	t.Helper()
	for _, r := range reps {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+r.addr+contract.PathHealth, nil)
		req.Header.Set(contract.HeaderInternalToken, "lease-test-token")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			cancel()
			t.Fatalf("%s health: %v", r.name, err)
		}
		var h contract.Health
		err = json.NewDecoder(resp.Body).Decode(&h)
		resp.Body.Close()
		cancel()
		if err != nil {
			t.Fatalf("%s health: %v", r.name, err)
		}
		var states []string
		for _, p := range h.Providers {
			want := "standby"
			if holders[p.Slug] == r.name {
				want = "held"
			}
			if p.Lease != want {
				t.Errorf("%s: %s lease %q, want %q", r.name, p.Slug, p.Lease, want)
			}
			states = append(states, p.Slug+"="+p.Lease)
		}
		if h.Status != contract.StatusOK {
			t.Errorf("%s: health %s (%s), want ok on holder and standbys alike", r.name, h.Status, strings.Join(states, " "))
		}
	}
}
