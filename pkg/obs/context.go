// Package obs is the observability every sensorgate binary shares: slog loggers that put the
// request id on every line, the request-id and HTTP middleware, the Prometheus metrics of
// docs/design.md's dashboard, and OpenTelemetry tracing configured by the standard OTEL_* variables.
package obs

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/trace"
)

// requestInfo is the per-request state that middleware at different depths share: the
// outer HTTP middleware creates it, the router records the route template and the
// authentication layer the key id, and the access log written by the outer layer after the
// handler returns sees both.
type requestInfo struct {
	mu sync.Mutex
	id string
	// idV is id as a ready header value (capacity 1, read only), set by Middleware.
	idV    []string
	route  string
	keyID  string
	tracer trace.Tracer
	// principal is who the request authenticated as (SetPrincipal), so that the auth
	// middleware need not copy the request to put it in a context of its own.
	principal any
}

type infoKey struct{}

func info(ctx context.Context) *requestInfo {
	if ctx == nil {
		return nil
	}
	ri, _ := ctx.Value(infoKey{}).(*requestInfo)
	return ri
}

// field reads one text field of ctx's request info under its lock; "" outside a request.
func field(ctx context.Context, at func(*requestInfo) *string) string {
	ri := info(ctx)
	if ri == nil {
		return ""
	}
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return *at(ri)
}

// setField sets one text field of ctx's request info under its lock; a no-op outside a
// request.
func setField(ctx context.Context, at func(*requestInfo) *string, v string) {
	if ri := info(ctx); ri != nil {
		ri.mu.Lock()
		*at(ri) = v
		ri.mu.Unlock()
	}
}

// WithRequestID returns a context that carries the request id id (and fresh slots for the
// route and key id). The HTTP middleware calls it; tests and background jobs may too.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, infoKey{}, &requestInfo{id: id})
}

// RequestID returns the request id of ctx, or "" outside a request.
func RequestID(ctx context.Context) string {
	return field(ctx, func(ri *requestInfo) *string { return &ri.id })
}

// RequestIDValues is the request id of ctx as a header value, for calls that pass it on:
// within Middleware the one slice its request and response headers already share (read
// only; capacity 1, so an append copies), elsewhere a new one; nil outside a request.
func RequestIDValues(ctx context.Context) []string {
	ri := info(ctx)
	if ri == nil {
		return nil
	}
	ri.mu.Lock()
	defer ri.mu.Unlock()
	if ri.idV != nil {
		return ri.idV
	}
	if ri.id == "" {
		return nil
	}
	return []string{ri.id}
}

// SetRoute records the route template (e.g. "/api/v1/sensors/:id") that matched the
// request, for metrics labels, span names and the access log. Routers that the middleware
// cannot see into (Gin) call it; a no-op outside a request.
func SetRoute(ctx context.Context, route string) {
	setField(ctx, func(ri *requestInfo) *string { return &ri.route }, route)
}

// Route returns the route template recorded with SetRoute, or "".
func Route(ctx context.Context) string {
	return field(ctx, func(ri *requestInfo) *string { return &ri.route })
}

// SetPrincipal records who the request authenticated as (the auth middleware's identity)
// in the request's own slot and reports whether there was one: outside Middleware there
// is none, and the caller keeps it in a context of its own instead. Within Middleware this
// saves the copy of the request (and a context) that http.Request.WithContext costs on
// every authenticated request.
func SetPrincipal(ctx context.Context, v any) bool {
	ri := info(ctx)
	if ri == nil {
		return false
	}
	ri.mu.Lock()
	ri.principal = v
	ri.mu.Unlock()
	return true
}

// Principal is what SetPrincipal recorded, or nil.
func Principal(ctx context.Context) any {
	ri := info(ctx)
	if ri == nil {
		return nil
	}
	ri.mu.Lock()
	defer ri.mu.Unlock()
	return ri.principal
}

// SetKeyID records the id (never the secret) of the API key that authenticated the
// request, so every later log line of the request names it. A no-op outside a request.
func SetKeyID(ctx context.Context, keyID string) {
	setField(ctx, func(ri *requestInfo) *string { return &ri.keyID }, keyID)
}

// KeyID returns the key id recorded with SetKeyID, or "".
func KeyID(ctx context.Context) string {
	return field(ctx, func(ri *requestInfo) *string { return &ri.keyID })
}
