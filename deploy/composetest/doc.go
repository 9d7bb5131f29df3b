// Package composetest runs docker-compose.yml (with docker-compose.local.yml over it, as
// make compose-test does: COMPOSE_FILES) in a real Docker engine:
// the stack comes up healthy, the README's curl examples and an MCP call answer through
// the published gateway port, Prometheus sees every target, a scaled-out service shares
// the calls and ingests once, a killed replica and restarted PostgreSQL and Redis cost no
// 5xx beyond the dying replica, and `down -v` leaves nothing. It needs Docker and a
// Compose v2 CLI (COMPOSE, set by the make target); without them it fails, never skips.
//
// The test file has the build tag "compose", so `make test` does not start containers.
package composetest
