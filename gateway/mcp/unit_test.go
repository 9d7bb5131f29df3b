package mcp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/readings"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ttlcache"
)

func TestNegotiate(t *testing.T) {
	t.Parallel()
	tests := []struct{ asked, want string }{
		{"2024-11-05", "2024-11-05"},
		{"2025-03-26", "2025-03-26"},
		{"2025-06-18", "2025-06-18"},
		{"2025-11-25", "2025-11-25"},
		{"2026-07-28", LatestProtocolVersion}, // stateless protocol: initialize answers the newest legacy one
		{"1999-01-01", LatestProtocolVersion},
		{"", LatestProtocolVersion},
	}
	for _, tt := range tests {
		if got := negotiate(tt.asked); got != tt.want {
			t.Errorf("negotiate(%q) = %q, want %q", tt.asked, got, tt.want)
		}
	}
}

func TestForwardParams(t *testing.T) {
	t.Parallel()
	meta := map[string]any{"sensor_id": "u-1", "sensor_external_id": "41001", "feed_slug": "ndbc"}
	tests := []struct {
		name, in, tool string
		want           map[string]any // expected top-level members after the rewrite
		wantErr        string
	}{
		{
			name: "meta added, arguments untouched",
			in:   `{"name":"ocean.latest_observation","arguments":{"station_id":"X"}}`, tool: "ocean.latest_observation",
			want: map[string]any{"name": "ocean.latest_observation", "arguments": map[string]any{"station_id": "X"},
				"_meta": map[string]any{"sensor_id": "u-1", "sensor_external_id": "41001", "feed_slug": "ndbc"}},
		},
		{
			name: "caller meta kept, gateway keys win",
			in:   `{"name":"ocean__latest_observation","_meta":{"progressToken":7,"sensor_id":"spoofed"}}`, tool: "ocean.latest_observation",
			want: map[string]any{"name": "ocean.latest_observation",
				"_meta": map[string]any{"progressToken": float64(7), "sensor_id": "u-1", "sensor_external_id": "41001", "feed_slug": "ndbc"}},
		},
		{name: "meta not an object", in: `{"name":"x","_meta":[1]}`, tool: "x", wantErr: "_meta"},
		{name: "params not an object", in: `[1,2]`, tool: "x", wantErr: "object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			out, err := forwardParams(json.RawMessage(tt.in), tt.tool, meta)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tt.want)
			if string(gb) != string(wb) {
				t.Errorf("got %s\nwant %s", gb, wb)
			}
		})
	}
}

func TestToolNameAlias(t *testing.T) {
	t.Parallel()
	tests := []struct{ service, in, dot, underscore string }{
		{"ocean", "ocean__latest_observation", "ocean.latest_observation", "ocean__latest_observation"},
		{"ocean", "ocean.latest_observation", "ocean.latest_observation", "ocean__latest_observation"},
		{"ocean", "weather__latest_observation", "weather__latest_observation", "weather__latest_observation"},
		{"ocean", "ocean__", "ocean__", "ocean__"},
		{"ocean", "describe_project", "describe_project", "describe_project"},
	}
	for _, tt := range tests {
		if got := dotName(tt.service, tt.in); got != tt.dot {
			t.Errorf("dotName(%q) = %q, want %q", tt.in, got, tt.dot)
		}
		if got := underscoreName(tt.service, dotName(tt.service, tt.in)); got != tt.underscore {
			t.Errorf("underscoreName(dotName(%q)) = %q, want %q", tt.in, got, tt.underscore)
		}
	}
}

func TestResponseFromSSE(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, in, want string
	}{
		{"single event", "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n", `{"jsonrpc":"2.0","id":1,"result":{}}`},
		{"notification first", "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\nid: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"result\":{\"x\":1}}\n\n", `{"jsonrpc":"2.0","id":"a","result":{"x":1}}`},
		{"multi-line data without final blank line", "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":3,\"result\":{}}", "{\"jsonrpc\":\"2.0\",\n\"id\":3,\"result\":{}}"},
		{"no response", "data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := responseFromSSE([]byte(tt.in))
			if tt.want == "" {
				if err == nil {
					t.Fatalf("got %s, want an error", got)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Errorf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestCursor(t *testing.T) {
	t.Parallel()
	c := pageCursor{Page: 3, Limit: 20, Query: queryHash(map[string]string{"q": "buoy"}), Since: "2026-01-01T00:00:00Z"}
	s := encodeCursor(c)
	got, err := decodeCursor("t", s, c.Query)
	if err != nil || got != c {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	tests := []struct {
		name, cursor string
		query        uint64
	}{
		{"other query", s, c.Query + 1},
		{"garbage", "!!!", c.Query},
		{"page one", encodeCursor(pageCursor{Page: 1, Limit: 5, Query: c.Query}), c.Query},
		{"zero limit", encodeCursor(pageCursor{Page: 2, Query: c.Query}), c.Query},
	}
	for _, tt := range tests {
		_, err := decodeCursor("t", tt.cursor, tt.query)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != apierr.InvalidParameter || !strings.Contains(ae.Message, "cursor") {
			t.Errorf("%s: err = %v, want invalid_parameter naming cursor", tt.name, err)
		}
	}
}

// TestCatalogCaches: the MCP catalog lookups use the one TTL cache type; a TTL of 0 or less
// disables them, and a positive one bounds them in bytes whatever the strings hold.
func TestCatalogCaches(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := newCache[string](time.Second, 2, 512, serviceStrings)
	c.Put("a", catalog.Service{ID: "a"}, now, now)
	if v, _, ok := c.Get("a", now.Add(500*time.Millisecond)); !ok || v.ID != "a" {
		t.Errorf("fresh entry: %v %v", v, ok)
	}
	if _, _, ok := c.Get("a", now.Add(2*time.Second)); ok {
		t.Errorf("expired entry served")
	}
	c.Put("b", catalog.Service{ID: "b"}, now, now)
	c.Put("c", catalog.Service{ID: "c"}, now, now)
	if c.Len() > 2 {
		t.Errorf("cache grew past its bound of 2: %d", c.Len())
	}
	if v, _, ok := c.Get("c", now); !ok || v.ID != "c" {
		t.Errorf("newest entry lost: %v %v", v, ok)
	}
	// One service with a huge description is over the byte bound alone: not kept.
	c.Put("big", catalog.Service{ID: "big", Description: strings.Repeat("x", 4096)}, now, now)
	if _, _, ok := c.Get("big", now); ok || c.Bytes() > 2*(512+ttlcache.EntryOverhead) {
		t.Errorf("entry past the byte bound kept: %d bytes", c.Bytes())
	}
	off := newCache[string](0, 2, 512, serviceStrings)
	off.Put("a", catalog.Service{ID: "a"}, now, now)
	if _, _, ok := off.Get("a", now); ok {
		t.Errorf("disabled cache served an entry")
	}
}

func TestFreshness(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	tests := []struct {
		name     string
		last     *time.Time
		interval int
		age      int64
		stale    *bool
	}{
		{"fresh", ago(10 * time.Minute), 600, 600, ptr(false)},
		{"exactly twice the interval is not stale", ago(20 * time.Minute), 600, 1200, ptr(false)},
		{"stale", ago(21 * time.Minute), 600, 1260, ptr(true)},
		{"unknown interval assumes an hour", ago(90 * time.Minute), 0, 5400, ptr(false)},
		{"future timestamp counts as age 0", ago(-time.Minute), 600, 0, ptr(false)},
		{"no reading", nil, 600, -1, nil},
	}
	for _, tt := range tests {
		f := newFreshness(tt.last, tt.interval, now)
		if tt.stale == nil {
			// pkg/freshness: a sensor that never reported is stale; its age is unknown.
			if f.Stale == nil || !*f.Stale || f.AgeSeconds != nil || f.LastReadingAt != nil {
				t.Errorf("%s: %+v, want null age and time, stale", tt.name, f)
			}
			continue
		}
		if f.AgeSeconds == nil || *f.AgeSeconds != tt.age || *f.Stale != *tt.stale {
			t.Errorf("%s: age %v stale %v, want %d %v", tt.name, deref(f.AgeSeconds), deref(f.Stale), tt.age, *tt.stale)
		}
	}
}

// TestToolSchemas compiles every schema of the gateway's own tools, so that a client that
// validates against them never meets a broken one.
func TestToolSchemas(t *testing.T) {
	t.Parallel()
	h, err := New(Config{Store: nilStore{}, Clients: map[string]*contract.Client{}, Readings: (*readings.Handlers)(nil)})
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []*toolSet{h.registryTools, h.catalogTools, h.projectTools} {
		for _, tool := range set.Tools() {
			for kind, sch := range map[string]any{"input": tool.InputSchema, "output": tool.OutputSchema} {
				var s jsonschema.Schema
				raw, err := json.Marshal(sch)
				if err == nil {
					err = json.Unmarshal(raw, &s)
				}
				if err != nil {
					t.Errorf("%s %s schema: %v", tool.Name, kind, err)
					continue
				}
				if _, err := s.Resolve(nil); err != nil {
					t.Errorf("%s %s schema does not resolve: %v", tool.Name, kind, err)
				}
				if s.Type != "object" {
					t.Errorf("%s %s schema has type %q, want object", tool.Name, kind, s.Type)
				}
			}
			if tool.Description == "" {
				t.Errorf("%s has no description", tool.Name)
			}
		}
	}
}

func ptr[T any](v T) *T { return &v }

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

// nilStore satisfies catalog.Store for tests that never touch the catalog.
type nilStore struct{ catalog.Store }
