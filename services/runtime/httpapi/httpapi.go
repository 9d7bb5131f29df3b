// Package httpapi is a backing service's internal HTTP API (the contract of package
// contract that the gateway calls): metadata, health, the stations it serves, their
// readings in the public envelope, and the MCP endpoint.
package httpapi

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/sensorgate/sensorgate/services/runtime/ingest"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/services/runtime/live"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// Deps are what the API serves.
type Deps struct {
	// Meta is the service's static metadata; SensorCount and LastIngestAt are filled
	// per request.
	Meta  contract.ServiceMeta
	Store store.Store
	// Providers reports the ingest state per provider.
	Providers func() []contract.ProviderHealth
	// ProviderHealthy judges one provider's state.
	ProviderHealthy func(contract.ProviderHealth) bool
	// Ready reports whether the first ingest cycle has finished.
	Ready func() bool
	// Stopping is closed when the service begins to shut down: /readyz answers 503 from
	// then on, while the server keeps serving for its shutdown delay (pkg/httpserver).
	// Nil: never.
	Stopping <-chan struct{}
	// IngestReport is the ingest report (per document: records read, readings stored,
	// drops by reason, time span), served at ingest.PathReport; nil answers an empty one.
	IngestReport func() ingest.Report
	// LastIngest is the time of the newest batch written.
	LastIngest func() *time.Time
	// Events is the log of stored readings served at /v1/events (package live); nil
	// answers 404.
	Events live.Log
	// MCP serves POST /mcp; nil answers 404.
	MCP http.Handler
	// InternalToken, when set, must be sent by every caller in contract.HeaderInternalToken
	// (except on /healthz and /readyz, which probes call).
	InternalToken string
	Logger        *slog.Logger
	Now           func() time.Time
	// Metrics, Registry and Tracing wire the shared observability (pkg/obs): request ids
	// (passed on by the gateway) on every log line, HTTP metrics by route pattern, a
	// server span continuing the gateway's traceparent, and, with Registry, GET /metrics.
	// Nil switches that part off.
	Metrics  *obs.Metrics
	Registry *prometheus.Registry
	Tracing  *obs.Tracing
}

// Server is the internal API.
type Server struct {
	d Deps
	h http.Handler
}

// NewServer returns the internal API handler.
func NewServer(d Deps) *Server {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Providers == nil {
		d.Providers = func() []contract.ProviderHealth { return nil }
	}
	if d.ProviderHealthy == nil {
		d.ProviderHealthy = func(h contract.ProviderHealth) bool { return h.LastError == "" }
	}
	if d.Ready == nil {
		d.Ready = func() bool { return true }
	}
	if d.IngestReport == nil {
		d.IngestReport = func() ingest.Report { return ingest.Report{Documents: []ingest.DocumentReport{}} }
	}
	if d.LastIngest == nil {
		d.LastIngest = func() *time.Time { return nil }
	}
	s := &Server{d: d}
	s.h = s.routes()
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.h.ServeHTTP(w, r) }

// handle registers h for method on path, and a JSON 405 for every other method there.
func (s *Server) handle(mux *http.ServeMux, method, path string, h http.HandlerFunc) {
	mux.HandleFunc(method+" "+path, h)
	allow := method
	if method == http.MethodGet {
		allow = "GET, HEAD"
	}
	mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Allow", allow)
		apierr.Write(w, apierr.New(apierr.MethodNotAllowed, "method %s is not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
	})
}

func (s *Server) notFound(w http.ResponseWriter, r *http.Request) {
	apierr.Write(w, apierr.New(apierr.NotFound, "no route %s %s", r.Method, r.URL.Path))
}

func (s *Server) requireToken(next http.Handler) http.Handler {
	if s.d.InternalToken == "" {
		return next
	}
	want := []byte(s.d.InternalToken)
	bearer := []byte("Bearer " + s.d.InternalToken)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Probes stay open: they say only ready or not. /metrics needs the token like every
		// other route (it shows routes, volumes and ingest state); a Prometheus scrape sends
		// it as "Authorization: Bearer <token>" (its authorization setting), docs/security.md.
		if r.URL.Path == contract.PathHealthz || r.URL.Path == contract.PathReadyz {
			next.ServeHTTP(w, r)
			return
		}
		ok := subtle.ConstantTimeCompare([]byte(r.Header.Get(contract.HeaderInternalToken)), want) == 1
		if !ok && r.URL.Path == obs.PathMetrics {
			ok = subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), bearer) == 1
		}
		if !ok {
			// The answer names no header: a caller that does not know how to
			// authenticate here learns nothing from it (the gateway logs the cause).
			apierr.Write(w, apierr.New(apierr.Forbidden, "forbidden: this is an internal service"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		apierr.Write(w, fmt.Errorf("encode response: %w", err))
		return
	}
	writeBytes(w, status, b)
}

func writeBytes(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// fail maps store errors to API errors and logs internal ones.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrStationNotFound):
		err = apierr.New(apierr.SensorNotFound, "no sensor %q in service %s", r.PathValue("id"), s.d.Meta.ID)
	case errors.Is(err, store.ErrNoReadings):
		err = apierr.New(apierr.NoReadings, "sensor %q has no readings yet", r.PathValue("id"))
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		s.d.Logger.Warn("request cut short", "path", r.URL.Path, "err", err)
	default:
		var ae *apierr.Error
		if !errors.As(err, &ae) {
			s.d.Logger.Error("request failed", "path", r.URL.Path, "err", err)
		}
	}
	apierr.Write(w, err)
}

func (s *Server) healthz() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}
}

func (s *Server) readyz() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.d.Store.Ping(ctx); err != nil {
			s.d.Logger.Warn("readyz: store", "err", err)
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not_ready", "reason": "readings store does not answer"})
			return
		}
		select {
		case <-s.d.Stopping:
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not_ready", "reason": "the service is shutting down"})
			return
		default:
		}
		if !s.d.Ready() {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not_ready", "reason": "first ingest cycle still running"})
			return
		}
		writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
	}
}

func (s *Server) meta() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		m := s.d.Meta
		st, err := s.d.Store.Stats(r.Context())
		if err != nil {
			s.fail(w, r, err)
			return
		}
		m.SensorCount = st.Stations
		if t := s.d.LastIngest(); t != nil {
			m.LastIngestAt = &contract.Time{Time: *t}
		}
		writeJSON(w, http.StatusOK, m)
	}
}

func (s *Server) health() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := contract.Health{ServiceID: s.d.Meta.ID, Version: s.d.Meta.Version, CheckedAt: contract.Time{Time: s.d.Now()}, Status: contract.StatusOK}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := s.d.Store.Ping(ctx); err != nil {
			h.Store = contract.StoreHealth{Reachable: false, Error: "readings store does not answer"}
			h.Status = contract.StatusDown
			s.d.Logger.Warn("health: store", "err", err)
		} else {
			h.Store.Reachable = true
		}
		h.Providers = s.d.Providers()
		if h.Providers == nil {
			h.Providers = []contract.ProviderHealth{}
		}
		if h.Status == contract.StatusOK {
			for _, p := range h.Providers {
				if !s.d.ProviderHealthy(p) {
					h.Status = contract.StatusDegraded
				}
			}
		}
		writeJSON(w, http.StatusOK, h)
	}
}

// Station list page sizes.
const (
	defaultStationsLimit = 100
	maxStationsLimit     = 1000
)

func (s *Server) sensors() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		now := s.d.Now()
		v := r.URL.Query()
		f := store.StationFilter{Page: 1, Limit: defaultStationsLimit, Provider: v.Get("provider"), Feed: v.Get("feed")}
		if x := v.Get("updated_since"); x != "" {
			t, err := contract.ParseTime(x)
			if err != nil {
				s.fail(w, r, apierr.Invalid("updated_since", "want an RFC 3339 time or a date YYYY-MM-DD, got %q", x))
				return
			}
			f.UpdatedSince = t
		}
		var err error
		if f.Page, err = intParam(v, "page", 1, 1, 10_000_000); err != nil {
			s.fail(w, r, err)
			return
		}
		if f.Limit, err = intParam(v, "limit", defaultStationsLimit, 1, 1<<31-1); err != nil {
			s.fail(w, r, err)
			return
		}
		f.Limit = min(f.Limit, maxStationsLimit)
		list, total, err := s.d.Store.Stations(r.Context(), f)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, contract.StationPage{Sensors: list, Pagination: contract.NewPagination(f.Page, f.Limit, total), ServerTime: contract.Time{Time: now}})
	}
}

func intParam(v url.Values, name string, def, lo, hi int) (int, error) {
	x := v.Get(name)
	if x == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(x))
	if err != nil || n < lo || n > hi {
		return 0, apierr.Invalid(name, "want an integer from %d, got %q", lo, x)
	}
	return n, nil
}

// stationID validates the {id} path value.
func (s *Server) stationID(r *http.Request) (string, error) {
	id := r.PathValue("id")
	if err := contract.ValidExternalID(id); err != nil {
		return "", apierr.New(apierr.SensorNotFound, "no sensor %q in service %s: %v", id, s.d.Meta.ID, err)
	}
	return id, nil
}

func (s *Server) sensor() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, st, _, err := stationQuery(s, r, noQuery)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, st)
	}
}

func (s *Server) mcp(w http.ResponseWriter, r *http.Request) {
	if s.d.MCP == nil {
		apierr.Write(w, apierr.New(apierr.NotFound, "service %s has no MCP endpoint", s.d.Meta.ID))
		return
	}
	s.d.MCP.ServeHTTP(w, r)
}
