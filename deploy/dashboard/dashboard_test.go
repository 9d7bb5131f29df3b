package dashboard_test

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/deploy/checks"
	"github.com/sensorgate/sensorgate/deploy/dashboard"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

func load(t *testing.T) *dashboard.Dashboard {
	t.Helper()
	root, err := checks.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	d, err := dashboard.Load(filepath.Join(root, dashboard.Path))
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestQueriesParse: every panel query of the dashboard, with Grafana's variables
// substituted, and every template variable's metric parse with Prometheus' PromQL parser
// and select at least one metric by name.
func TestQueriesParse(t *testing.T) {
	d := load(t)
	for _, q := range d.Queries {
		names, err := dashboard.MetricNames(q.Expr)
		if err != nil {
			t.Errorf("panel %q %s: %v\n  %s", q.Panel, q.RefID, err, q.Expr)
		} else if len(names) == 0 {
			t.Errorf("panel %q %s selects no metric: %s", q.Panel, q.RefID, q.Expr)
		}
	}
	for _, v := range d.Variables {
		if _, err := dashboard.MetricNames(v.Metric); err != nil {
			t.Errorf("variable %s: label_values(%s, %s): %v", v.Name, v.Metric, v.Label, err)
		}
	}
	if len(d.Queries) < 20 || len(d.Variables) < 2 {
		t.Errorf("%d queries and %d variables; the dashboard has more", len(d.Queries), len(d.Variables))
	}
	t.Logf("%d queries and %d variables parse", len(d.Queries), len(d.Variables))
}

// TestBrokenQueriesRefused: the parser and the variable substitution catch the mistakes
// a hand-edited dashboard gets (so TestQueriesParse passing means something).
func TestBrokenQueriesRefused(t *testing.T) {
	for _, expr := range []string{
		`sum(rate(sensorgate_http_request_duration_seconds_count[1m])`,        // unbalanced
		`sum by component (rate(sensorgate_ingest_readings_total[1m]))`,       // by without parentheses
		`histogram_quantil(0.95, sum by (le) (rate(x_bucket[1m])))`,           // unknown function
		`rate(sensorgate_ingest_readings_total)`,                              // rate of an instant vector
		`sensorgate_build_info{component=~"$component"`,                       // unclosed selector
		`sum(rate(sensorgate_http_request_duration_seconds_count[$__rate]))`,  // unsubstituted variable
		`sum(rate(sensorgate_http_request_duration_seconds_count[1m])) by le`, // trailing by without parentheses
	} {
		if _, err := dashboard.MetricNames(expr); err == nil {
			t.Errorf("parsed: %s", expr)
		}
	}
	dir := t.TempDir()
	bad := `{"title":"x","templating":{"list":[]},"panels":[{"title":"p","targets":[{"refId":"A","expr":"up{job=~\"$job\"}"}]}]}`
	if err := os.WriteFile(filepath.Join(dir, "d.json"), []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := dashboard.Load(filepath.Join(dir, "d.json")); err == nil || !strings.Contains(err.Error(), "job") {
		t.Errorf("a query with an undefined variable: %v, want an error naming it", err)
	}
}

// prometheusMade are the series Prometheus itself adds for every target.
var prometheusMade = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

// TestMetricsExist runs the gateway and the three services as processes (simulated
// sources, SQLite stores, the test Redis for rate limits), sends a few API calls, and
// checks that every metric the dashboard queries appears in their /metrics.
func TestMetricsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	d := load(t)
	want := map[string][]string{} // metric -> panels
	for _, q := range d.Queries {
		names, err := dashboard.MetricNames(q.Expr)
		if err != nil {
			t.Fatalf("panel %q: %v", q.Panel, err)
		}
		for _, n := range names {
			want[n] = append(want[n], q.Panel)
		}
	}
	for _, v := range d.Variables {
		names, _ := dashboard.MetricNames(v.Metric)
		for _, n := range names {
			want[n] = append(want[n], "variable "+v.Name)
		}
	}

	dir := t.TempDir()
	gw := testenv.Build(t, dir, "gateway", "github.com/sensorgate/sensorgate/gateway/cmd/gateway")
	addrs := map[string]string{}
	var urls []string
	for _, svc := range []string{"ocean", "weather", "airquality"} {
		bin := testenv.Build(t, dir, svc, "github.com/sensorgate/sensorgate/services/cmd/"+svc)
		addrs[svc] = testenv.FreeAddr(t)
		testenv.Start(t, bin, "SERVICE_ADDR="+addrs[svc], "READINGS_SQLITE_PATH="+filepath.Join(dir, svc+".db"),
			"SOURCE_MODE=simulate", "SIM_STATIONS=3", "SIM_DAYS=1", "SIM_SEED=7", "LOG_FORMAT=json")
		urls = append(urls, svc+"=http://"+addrs[svc])
	}
	key := make([]byte, 16)
	_, _ = rand.Read(key)
	devKey := "sg_dev_" + hex.EncodeToString(key)
	addrs["gateway"] = testenv.FreeAddr(t)
	testenv.Start(t, gw, "GATEWAY_ADDR="+addrs["gateway"], "SQLITE_PATH="+filepath.Join(dir, "catalog.db"),
		"SENSORGATE_ENV=development", "DEV_API_KEY="+devKey, "REDIS_URL="+testenv.RedisURL(),
		"SERVICE_URLS="+strings.Join(urls, ","), "SYNC_INTERVAL=1s", "PROBE_INTERVAL=1s", "LOG_FORMAT=json")

	client := &http.Client{Timeout: 10 * time.Second}
	get := func(url string, withKey bool) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if withKey {
			req.Header.Set("x-api-key", devKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0, nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	// Every service has ingested once (readyz) and the gateway's catalog has their sensors.
	api := "http://" + addrs["gateway"] + "/api/v1"
	var sensors struct {
		Sensors []struct {
			ID string `json:"id"`
		} `json:"sensors"`
	}
	deadline := time.Now().Add(3 * time.Minute)
	for {
		ready := true
		for _, a := range addrs {
			code, _ := get("http://"+a+"/readyz", false)
			ready = ready && code == http.StatusOK
		}
		if ready {
			code, b := get(api+"/sensors?limit=20", true)
			ready = code == http.StatusOK && json.Unmarshal(b, &sensors) == nil && len(sensors.Sensors) > 0
		}
		if ready {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("gateway and services not ready within 3 minutes")
		}
		time.Sleep(500 * time.Millisecond)
	}

	scrape := func() map[string]bool {
		got := map[string]bool{}
		for _, a := range addrs {
			code, b := get("http://"+a+"/metrics", false)
			if code != http.StatusOK {
				t.Fatalf("GET %s/metrics: %d %.200s", a, code, b)
			}
			sc := bufio.NewScanner(strings.NewReader(string(b)))
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				line := sc.Text()
				if line == "" || line[0] == '#' {
					continue
				}
				if i := strings.IndexAny(line, "{ "); i > 0 {
					got[line[:i]] = true
				}
			}
		}
		return got
	}
	var missing []string
	deadline = time.Now().Add(time.Minute)
	for {
		// API calls that touch every path the dashboard shows: key lookups (a miss, then
		// hits), rate-limit decisions, upstream calls to each service and their stores.
		for _, path := range []string{"/services", "/sensors?limit=5", "/sensors/types", "/services/weather/health", "/services/airquality/health"} {
			get(api+path, true)
		}
		for _, s := range sensors.Sensors {
			get(api+"/sensors/"+s.ID+"/readings?limit=3", true)
		}
		got := scrape()
		missing = missing[:0]
		for name := range want {
			if !got[name] && !slices.Contains(prometheusMade, name) {
				missing = append(missing, name)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(2 * time.Second)
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("the dashboard queries %s (panels %q), which no binary's /metrics has", m, want[m])
	}
	t.Logf("%d metrics of the dashboard found in the /metrics of the gateway and the three services", len(want))
}
