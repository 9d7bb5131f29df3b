package storemetrics

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/gateway/ratelimit"
	shared "github.com/sensorgate/sensorgate/pkg/obs"
)

// deployDir holds the dashboard and alert rules this test keeps honest.
const deployDir = "../../deploy/observability"

// capturingRegisterer records the names of every metric registered through it.
type capturingRegisterer struct {
	prometheus.Registerer
	names map[string]bool
}

var fqNameRE = regexp.MustCompile(`fqName: "([^"]+)"`)

func (c *capturingRegisterer) Register(col prometheus.Collector) error {
	ch := make(chan *prometheus.Desc)
	go func() { col.Describe(ch); close(ch) }()
	for d := range ch {
		if m := fqNameRE.FindStringSubmatch(d.String()); m != nil {
			c.names[m[1]] = true
		}
	}
	return c.Registerer.Register(col)
}

func (c *capturingRegisterer) MustRegister(cs ...prometheus.Collector) {
	for _, col := range cs {
		if err := c.Register(col); err != nil {
			panic(err) // the Registerer contract of MustRegister; only reached in this test
		}
	}
}

// registeredNames builds the registries the binaries build and returns every metric name
// they can expose, plus up, which Prometheus itself adds per target.
func registeredNames(t *testing.T) map[string]bool {
	t.Helper()
	names := map[string]bool{"up": true}
	for _, component := range []string{"gateway", "ocean", "weather", "airquality"} {
		reg, err := shared.NewRegistry()
		if err != nil {
			t.Fatal(err)
		}
		cr := &capturingRegisterer{Registerer: reg, names: names}
		if _, err := shared.NewMetrics(cr, component); err != nil {
			t.Fatal(err)
		}
		if component != "gateway" {
			if err := cr.Register(shared.NewIngestCollector(component, func() []shared.ProviderIngest { return nil })); err != nil {
				t.Fatal(err)
			}
		}
		if component == "gateway" {
			mem := ratelimit.NewMemory(time.Now)
			if _, err := ratelimit.NewFallback(mem, ratelimit.NewMemory(time.Now), ratelimit.FallbackOptions{Registerer: cr}); err != nil {
				t.Fatal(err)
			}
		}
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			names[mf.GetName()] = true
		}
	}
	return names
}

var (
	quotedRE  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matcherRE = regexp.MustCompile(`\{[^}]*\}`)
	rangeRE   = regexp.MustCompile(`\[[^\]]*\]`)
	groupRE   = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	identRE   = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	keywords  = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true, "le": true, "inf": true, "nan": true}
)

// metricNames returns the metric names a PromQL expression (or Grafana query) selects.
func metricNames(expr string) []string {
	e := strings.ReplaceAll(expr, "$__rate_interval", "5m")
	e = quotedRE.ReplaceAllString(e, `""`)
	e = matcherRE.ReplaceAllString(e, " ")
	e = rangeRE.ReplaceAllString(e, " ")
	e = groupRE.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range identRE.FindAllStringIndex(e, -1) {
		word := e[loc[0]:loc[1]]
		rest := strings.TrimLeft(e[loc[1]:], " \t\n")
		if strings.HasPrefix(rest, "(") || keywords[strings.ToLower(word)] {
			continue // a function or an operator keyword
		}
		if loc[0] > 0 && (e[loc[0]-1] == '$' || (e[loc[0]-1] >= '0' && e[loc[0]-1] <= '9') || e[loc[0]-1] == '.') {
			continue // a Grafana variable or a number's tail (1e3, 0.5)
		}
		out = append(out, word)
	}
	return out
}

func known(names map[string]bool, metric string) bool {
	if names[metric] {
		return true
	}
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if base, ok := strings.CutSuffix(metric, suffix); ok && names[base] {
			return true
		}
	}
	return false
}

func balanced(expr string) bool {
	depth := map[rune]int{}
	pairs := map[rune]rune{')': '(', '}': '{', ']': '['}
	for _, r := range quotedRE.ReplaceAllString(expr, `""`) {
		switch r {
		case '(', '{', '[':
			depth[r]++
		case ')', '}', ']':
			depth[pairs[r]]--
			if depth[pairs[r]] < 0 {
				return false
			}
		}
	}
	return depth['('] == 0 && depth['{'] == 0 && depth['['] == 0
}

type dashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
		} `json:"list"`
	} `json:"templating"`
	Panels []struct {
		ID         int    `json:"id"`
		Type       string `json:"type"`
		Title      string `json:"title"`
		Datasource struct {
			UID string `json:"uid"`
		} `json:"datasource"`
		Targets []struct {
			Expr  string `json:"expr"`
			RefID string `json:"refId"`
		} `json:"targets"`
	} `json:"panels"`
}

func TestDashboardUsesRegisteredMetrics(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(deployDir, "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("dashboard is not JSON: %v", err)
	}
	if d.Title == "" || d.UID == "" {
		t.Error("dashboard needs a title and a uid")
	}
	names := registeredNames(t)
	used := map[string]bool{}
	check := func(where, expr string) {
		t.Helper()
		if !balanced(expr) {
			t.Errorf("%s: unbalanced brackets in %q", where, expr)
		}
		ms := metricNames(expr)
		if len(ms) == 0 {
			t.Errorf("%s: %q selects no metric", where, expr)
		}
		for _, m := range ms {
			used[m] = true
			if !known(names, m) {
				t.Errorf("%s: metric %q is not registered by any binary", where, m)
			}
		}
	}
	labelValues := regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_]+\s*\)$`)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		m := labelValues.FindStringSubmatch(v.Definition)
		if m == nil {
			t.Errorf("variable %s: want label_values(<selector>, <label>), got %q", v.Name, v.Definition)
			continue
		}
		check("variable "+v.Name, m[1])
	}
	ids := map[int]bool{}
	for _, p := range d.Panels {
		if ids[p.ID] {
			t.Errorf("panel id %d is used twice", p.ID)
		}
		ids[p.ID] = true
		if p.Type == "row" {
			continue
		}
		if p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %q, want the ${datasource} variable", p.Title, p.Datasource.UID)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, tg := range p.Targets {
			check("panel "+p.Title, tg.Expr)
		}
	}
	// The dashboard shows every family of the issue.
	for _, m := range []string{
		"sensorgate_http_request_duration_seconds_bucket", "sensorgate_upstream_request_duration_seconds_count",
		"sensorgate_ratelimit_decisions_total", "sensorgate_auth_key_cache_lookups_total",
		"sensorgate_ingest_readings_total", "sensorgate_ingest_rows_rejected_total",
		"sensorgate_ingest_last_success_timestamp_seconds", "sensorgate_ingest_lag_seconds",
		"sensorgate_store_query_duration_seconds_bucket", "sensorgate_stream_delay_seconds_bucket", "up",
	} {
		if !used[m] {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
}

type ruleFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func TestAlertRulesUseRegisteredMetrics(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(deployDir, "alert-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := yaml.UnmarshalWithOptions(b, &rf, yaml.Strict()); err != nil {
		t.Fatalf("alert rules: %v", err)
	}
	names := registeredNames(t)
	alerts := map[string]bool{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			if r.Alert == "" || alerts[r.Alert] {
				t.Errorf("%s: alert name empty or repeated", where)
			}
			alerts[r.Alert] = true
			if _, err := time.ParseDuration(r.For); err != nil {
				t.Errorf("%s: for %q: %v", where, r.For, err)
			}
			if s := r.Labels["severity"]; s != "critical" && s != "warning" {
				t.Errorf("%s: severity %q, want critical or warning", where, s)
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: needs a summary and a description", where)
			}
			if !balanced(r.Expr) {
				t.Errorf("%s: unbalanced brackets", where)
			}
			ms := metricNames(r.Expr)
			if len(ms) == 0 {
				t.Errorf("%s: expression selects no metric", where)
			}
			for _, m := range ms {
				if !known(names, m) {
					t.Errorf("%s: metric %q is not registered by any binary", where, m)
				}
			}
		}
	}
	for _, a := range []string{"SensorgateBinaryDown", "SensorgateServiceDown", "SensorgateIngestLag", "SensorgateHigh5xxRate"} {
		if !alerts[a] {
			t.Errorf("alert %s is missing", a)
		}
	}
}

func TestMetricNamesParser(t *testing.T) {
	t.Parallel()
	tests := []struct{ expr, want string }{
		{`up{job=~"sensorgate.*"} == 0`, "up"},
		{`sum by (component, route) (rate(sensorgate_http_request_duration_seconds_count{component=~"$component"}[$__rate_interval]))`, "sensorgate_http_request_duration_seconds_count"},
		{`histogram_quantile(0.95, sum by (le) (rate(a_bucket[5m]))) > 1e3`, "a_bucket"},
		{`time() - max by (provider) (b) > 3600`, "b"},
		{`x / on(job) group_left y`, "x y"},
	}
	for _, tc := range tests {
		got := metricNames(tc.expr)
		sort.Strings(got)
		want := strings.Fields(tc.want)
		sort.Strings(want)
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("metricNames(%q) = %v, want %v", tc.expr, got, want)
		}
	}
}
