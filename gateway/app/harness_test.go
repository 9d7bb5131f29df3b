package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalogsync"
	"github.com/sensorgate/sensorgate/gateway/config"
	"github.com/sensorgate/sensorgate/gateway/openapi"
	"github.com/sensorgate/sensorgate/pkg/ids"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// fixturePath is the catalog the catalog-sync engineer maintains for tests.
var fixturePath = filepath.Join("..", "catalogsync", "testdata", "catalog.json")

// syncBuffer is an io.Writer the server and the test may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env is a test's environment, read through getenv like os.Getenv.
type env map[string]string

func (e env) getenv(k string) string { return e[k] }

func (e env) with(kv ...string) env {
	out := env{}
	for k, v := range e {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// backends are the two catalog databases every end-to-end test runs on.
func backends(t *testing.T) map[string]func(t *testing.T) env {
	return map[string]func(t *testing.T) env{
		"sqlite": func(t *testing.T) env {
			return env{"SQLITE_PATH": filepath.Join(t.TempDir(), "gateway.db")}
		},
		"postgres": func(t *testing.T) env {
			return env{"DATABASE_URL": testenv.Postgres(t)}
		},
	}
}

// admin runs one admin command through Run, as the binary would, and returns its output.
func admin(t *testing.T, e env, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	err := Run(ctx, append([]string{"gateway"}, args...), e.getenv, &out)
	return out.String(), err
}

func mustAdmin(t *testing.T, e env, args ...string) string {
	t.Helper()
	out, err := admin(t, e, args...)
	if err != nil {
		t.Fatalf("gateway %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// gateway is a whole gateway started through Run on a free port.
type gateway struct {
	url    string
	log    *syncBuffer
	client *http.Client
}

// startGateway starts `gateway serve` in-process and waits for /healthz. The gateway stops
// (and must stop cleanly) when the test ends.
func startGateway(t *testing.T, e env) *gateway {
	t.Helper()
	addr := e["GATEWAY_ADDR"] // a test that must know the address first (its public origin) sets it
	if addr == "" {
		addr = testenv.FreeAddr(t)
	}
	e = e.with("GATEWAY_ADDR", addr)
	g := &gateway{url: "http://" + addr, log: &syncBuffer{}}
	g.client = &http.Client{Timeout: 30 * time.Second, Transport: openapi.ValidateTransport(t, nil)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, []string{"gateway", "serve"}, e.getenv, g.log) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("gateway stopped with %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("gateway did not stop within 30s of its context ending")
		}
		if t.Failed() {
			t.Logf("gateway log:\n%s", g.log.String())
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case err := <-done:
			t.Fatalf("gateway exited before it was ready: %v\n%s", err, g.log.String())
		default:
		}
		resp, err := http.Get(g.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return g
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway not healthy within 30s: %v\n%s", err, g.log.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// response is one answer, decoded.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

func (r response) object(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	r.json(t, &m)
	return m
}

func (g *gateway) do(t *testing.T, method, path, key string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(method, g.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", method, path, err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func (g *gateway) get(t *testing.T, path, key string) response {
	t.Helper()
	return g.do(t, http.MethodGet, path, key)
}

// wantError checks an error answer: status, code, and that the message names what it
// must.
func wantError(t *testing.T, r response, status int, code string, mentions ...string) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	var e struct{ Error, Code string }
	r.json(t, &e)
	if e.Code != code {
		t.Errorf("code %q, want %q (%s)", e.Code, code, r.body)
	}
	if e.Error == "" {
		t.Errorf("empty error message: %s", r.body)
	}
	for _, m := range mentions {
		if !strings.Contains(e.Error, m) {
			t.Errorf("message %q does not mention %q", e.Error, m)
		}
	}
	if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type %q", ct)
	}
}

// refSensor is a fixture sensor as the tests compute expectations from it, independently
// of the gateway's code.
type refSensor struct {
	ID, ExternalID, Name, Description, Type, Status, ProviderSlug, ProviderName, Feed, Service string
	DataTypes                                                                                  []string
	Lat, Lon                                                                                   *float64
}

// loadFixture reads the catalog fixture into reference sensors ordered by name, then id.
func loadFixture(t *testing.T) []refSensor {
	t.Helper()
	b, err := os.ReadFile(fixturePath)
	if err != nil {
		t.Fatalf("catalog fixture: %v", err)
	}
	var f catalogsync.File
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatalf("catalog fixture: %v", err)
	}
	var out []refSensor
	for _, s := range f.Services {
		names := map[string]string{}
		for _, p := range s.Providers {
			names[p.Slug] = p.Name
		}
		for _, st := range s.Sensors {
			out = append(out, refSensor{
				ID: ids.Sensor(s.ID, st.ExternalID).String(), ExternalID: st.ExternalID, Name: st.Name,
				Description: st.Description, Type: st.SensorType, Status: st.Status,
				ProviderSlug: st.ProviderSlug, ProviderName: names[st.ProviderSlug], Feed: st.FeedSlug,
				Service: s.ID, DataTypes: st.DataTypes, Lat: st.Latitude, Lon: st.Longitude,
			})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].ID < out[j].ID
	})
	return out
}

func refIDs(ss []refSensor, keep func(refSensor) bool) []string {
	out := []string{}
	for _, s := range ss {
		if keep(s) {
			out = append(out, s.ID)
		}
	}
	return out
}

// haversineKM is the tests' own great-circle distance (mean earth radius).
func haversineKM(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0088
	rad := math.Pi / 180
	a := math.Pow(math.Sin((lat2-lat1)*rad/2), 2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Pow(math.Sin((lon2-lon1)*rad/2), 2)
	return 2 * r * math.Asin(math.Sqrt(math.Min(1, a)))
}

// devKey is the documented default development key.
const devKey = config.DefaultDevAPIKey

// keyLine returns the key printed by keys create (its first line).
func keyLine(t *testing.T, out string) string {
	t.Helper()
	line, _, _ := strings.Cut(out, "\n")
	if !strings.HasPrefix(line, "sg_dev_") && !strings.HasPrefix(line, "sg_live_") {
		t.Fatalf("keys create did not print a key first:\n%s", out)
	}
	return line
}

func fmtQuery(kv ...any) string {
	var b strings.Builder
	for i := 0; i+1 < len(kv); i += 2 {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		fmt.Fprintf(&b, "%v=%v", kv[i], kv[i+1])
	}
	return b.String()
}
