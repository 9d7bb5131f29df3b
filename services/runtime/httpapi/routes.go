package httpapi

import (
	"net/http"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/services/runtime/ingest"
)

// routes is the whole internal API of a backing service.
func (s *Server) routes() http.Handler {
	mux := http.NewServeMux()
	s.handle(mux, http.MethodGet, contract.PathHealthz, s.healthz())
	s.handle(mux, http.MethodGet, contract.PathReadyz, s.readyz())
	s.handle(mux, http.MethodGet, contract.PathMeta, s.meta())
	s.handle(mux, http.MethodGet, contract.PathHealth, s.health())
	s.handle(mux, http.MethodGet, contract.PathSensors, s.sensors())
	s.handle(mux, http.MethodGet, contract.PathSensors+"/{id}", s.sensor())
	s.handle(mux, http.MethodGet, contract.PathSensors+"/{id}/readings/latest", s.latest())
	s.handle(mux, http.MethodGet, contract.PathSensors+"/{id}/readings", s.readings())
	s.handle(mux, http.MethodGet, contract.PathSensors+"/{id}/readings/aggregate", s.aggregate())
	s.handle(mux, http.MethodGet, contract.PathExport, s.export())
	// Live data (docs/live.md): the batched latest of area latest, the event log of streams.
	s.handle(mux, http.MethodPost, contract.PathLatestBatch, s.latestBatch())
	s.handle(mux, http.MethodGet, contract.PathEvents, s.events())
	s.handle(mux, http.MethodPost, contract.PathMCP, s.mcp)
	s.handle(mux, http.MethodGet, ingest.PathReport, s.ingestReport())
	if s.d.Registry != nil {
		s.handle(mux, http.MethodGet, obs.PathMetrics, obs.MetricsHandler(s.d.Registry).ServeHTTP)
	}
	mux.HandleFunc("/", s.notFound)
	// The mux is passed to the middleware directly (requireToken keeps the request), so
	// the metrics see the pattern it matched, never the raw path.
	// Every gateway long-polls the event log all day: its lines are debug, like probes'.
	quiet := obs.DefaultQuiet()
	quiet[contract.PathEvents] = true
	return obs.Middleware(s.requireToken(mux), obs.HTTPOptions{
		Logger: s.d.Logger, Metrics: s.d.Metrics, Tracing: s.d.Tracing, Quiet: quiet,
	})
}
