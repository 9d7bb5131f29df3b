package httpapi

import (
	"net/http"

	"github.com/sensorgate/sensorgate/pkg/contract"
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
	s.handle(mux, http.MethodPost, contract.PathMCP, s.mcp)
	mux.HandleFunc("/", s.notFound)
	return s.logRequests(s.requireToken(mux))
}
