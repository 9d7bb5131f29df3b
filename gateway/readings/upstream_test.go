package readings

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestUpstreamAnswersAreChecked sends a real service's hostile or broken answers through
// the proxy: only JSON (or a format answer on the readings route) with an expected status
// reaches the client; everything else is a 502 in the error shape, logged with status,
// content type and length and never the body; no secret of the answer reaches the client
// or the log, and every answer carries nosniff-safe JSON.
func TestUpstreamAnswersAreChecked(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		mode   int32
		path   string
		status int
		code   string
		ctype  string
	}{
		{"html", modeHTML, "latest", 502, "upstream_bad_response", ""},
		{"redirect", modeRedirect, "latest", 502, "upstream_bad_response", ""},
		{"204", mode204, "readings", 502, "upstream_bad_response", ""},
		{"json type over html", modeJSONLie, "latest", 502, "upstream_bad_response", ""},
		{"404 with extra fields", modeSecret404, "latest", 404, "sensor_not_found", "application/json"},
		{"404 with a code of another status", modeWrongCode404, "latest", 502, "upstream_bad_response", ""},
		{"401", mode401, "latest", 502, "upstream_unavailable", ""},
		{"403", mode403, "readings", 502, "upstream_unavailable", ""},
		{"csv on latest", modeCSV, "latest", 502, "upstream_bad_response", ""},
		{"csv on readings", modeCSV, "readings", 200, "", "text/csv"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			logs := &lockedBuffer{}
			e := newEnv(t, envOptions{logger: slog.New(slog.NewTextHandler(logs, nil))})
			e.ocean.mode.Store(tc.mode)
			path := "/api/v1/sensors/41001/readings/latest"
			if tc.path == "readings" {
				path = "/api/v1/sensors/41001/readings"
			}
			r := e.get(t, path)
			if r.status != tc.status {
				t.Fatalf("status %d %s, want %d", r.status, r.body, tc.status)
			}
			if tc.code != "" && r.code(t) != tc.code {
				t.Errorf("body %s, want code %s", r.body, tc.code)
			}
			if tc.ctype != "" && !strings.HasPrefix(r.header.Get("Content-Type"), tc.ctype) {
				t.Errorf("content type %q, want %s", r.header.Get("Content-Type"), tc.ctype)
			}
			for _, leak := range []string{"hunter2", "<script", "169.254", "X-Internal-Token", "dsn", "main.go"} {
				if strings.Contains(string(r.body), leak) || strings.Contains(strings.Join(r.header.Values("Location"), ""), leak) {
					t.Errorf("the client sees %q: %s", leak, r.body)
				}
				if strings.Contains(logs.String(), leak) && leak != "X-Internal-Token" {
					t.Errorf("the log holds %q:\n%s", leak, logs.String())
				}
			}
			if r.header.Get("X-Secret") != "" || r.header.Get("Location") != "" {
				t.Errorf("upstream headers passed on: %v", r.header)
			}
			if tc.status == 502 {
				for _, want := range []string{"status=", "content_type=", "length="} {
					if !strings.Contains(logs.String(), want) {
						t.Errorf("the log line lacks %s:\n%s", want, logs.String())
					}
				}
			}
		})
	}
}
