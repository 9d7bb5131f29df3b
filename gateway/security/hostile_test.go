package security

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// hostileSecret is in every hostile answer: it must reach neither a client nor a log.
const hostileSecret = "postgres://admin:hunter2@10.0.0.5:5432/readings"

// hostileName is a station name an attacker controlling a provider would send.
const hostileName = `<img src=x onerror=alert(1)>`

// hostileStations are the stations of the hostile service and how it answers their
// readings.
var hostileStations = []string{"H-HTML", "H-REDIR", "H-204", "H-LEAK", "H-OK"}

// hostile is a real HTTP server speaking the internal service contract whose readings
// answers are hostile or broken, recording every request it gets.
type hostile struct {
	url   string
	mu    sync.Mutex
	paths []string
}

func (h *hostile) requests() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.paths...)
}

func startHostile(t *testing.T) *hostile {
	t.Helper()
	h := &hostile{}
	mux := http.NewServeMux()
	j := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux.HandleFunc("GET /v1/meta", func(w http.ResponseWriter, r *http.Request) {
		j(w, contract.ServiceMeta{ID: "hostile", Name: "Hostile service", Domain: "test", TemporalPattern: "periodic", Status: "active",
			Providers: []contract.Provider{{Slug: "hostprov", Name: "Hostile provider"}},
			Feeds:     []contract.Feed{{Slug: "host-feed", Name: "Hostile feed", ProviderSlug: "hostprov", Domain: "test", TemporalPattern: "periodic", FeedType: "timeseries"}}})
	})
	mux.HandleFunc("GET /v1/sensors", func(w http.ResponseWriter, r *http.Request) {
		var ss []contract.Station
		for _, id := range hostileStations {
			ss = append(ss, contract.Station{ExternalID: id, Name: hostileName + " " + id, Description: "hostile",
				SensorType: "buoy", Status: "active", DataTypes: []string{"wave_height_m"}, ProviderSlug: "hostprov",
				FeedSlug: "host-feed", UpdatedAt: contract.Time{Time: time.Now()}})
		}
		j(w, contract.StationPage{Sensors: ss, Pagination: contract.NewPagination(1, 100, len(ss)), ServerTime: contract.Time{Time: time.Now()}})
	})
	mux.HandleFunc("GET /v1/health", func(w http.ResponseWriter, r *http.Request) {
		j(w, contract.Health{ServiceID: "hostile", Status: "ok", Providers: []contract.ProviderHealth{}})
	})
	mux.HandleFunc("GET /v1/sensors/{id}/", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.paths = append(h.paths, r.URL.RequestURI())
		h.mu.Unlock()
		switch r.PathValue("id") {
		case "H-HTML":
			w.Header().Set("Content-Type", "text/html")
			_, _ = w.Write([]byte("<script>alert(1)</script>" + hostileSecret))
		case "H-REDIR":
			w.Header().Set("Location", "http://169.254.169.254/latest/meta-data/")
			w.WriteHeader(http.StatusFound)
		case "H-204":
			w.WriteHeader(http.StatusNoContent)
		case "H-LEAK":
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_, _ = w.Write([]byte(`{"error":"sensor not found","code":"sensor_not_found","dsn":"` + hostileSecret + `"}`))
		default:
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"sensor_id":"x","readings":[]}`))
		}
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.paths = append(h.paths, r.URL.RequestURI())
		h.mu.Unlock()
		http.NotFound(w, r)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	h.url = "http://" + ln.Addr().String()
	return h
}

// onlyExpectedUpstreamPaths fails if the hostile service got a request that is not a
// readings call for one of its own stations, its id escaped as one path segment, or one of
// the gateway's fixed background calls (the catalog sync and probes have their own
// handlers and are not recorded).
func onlyExpectedUpstreamPaths(t *testing.T, h *hostile) {
	t.Helper()
	for _, p := range h.requests() {
		path, _, _ := strings.Cut(p, "?")
		// The gateway's own background calls of the contract (live events, batched latest).
		if path == contract.PathEvents || path == contract.PathLatestBatch {
			continue
		}
		rest, ok := strings.CutPrefix(path, "/v1/sensors/")
		seg, tail, _ := strings.Cut(rest, "/")
		known := false
		for _, id := range hostileStations {
			known = known || seg == id
		}
		if !ok || !known || (tail != "readings" && tail != "readings/latest" && tail != "readings/aggregate") {
			t.Errorf("the hostile service was asked for %q", p)
		}
	}
}
