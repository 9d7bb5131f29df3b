// Package httpserver is the one HTTP server set-up of the gateway and the backing services:
// the same timeouts and header limit, the same guard against DNS rebinding on a loopback
// listener (LocalOnly), and the same shutdown: readiness goes false first, the server
// keeps serving for a delay so that load balancers see it leave, then it stops accepting
// and gives the requests in flight a grace period to finish.
package httpserver

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server limits. Requests are small (the gateway caps bodies before reading them); the write
// timeout allows for a large readings page or export from a slow store. A streaming handler
// lifts the write deadline for itself with http.ResponseController.SetWriteDeadline.
const (
	ReadHeaderTimeout = 5 * time.Second
	ReadTimeout       = 30 * time.Second
	WriteTimeout      = 60 * time.Second
	IdleTimeout       = 120 * time.Second
	MaxHeaderBytes    = 64 << 10
)

// Config is what differs between the processes that use the set-up.
type Config struct {
	// Logger receives the server's own errors (TLS handshakes, panics) at Warn.
	Logger *slog.Logger
	// ShutdownDelay is how long the server keeps serving, with Ready false, after shutdown
	// begins and before it stops accepting connections (the load balancer's probe period).
	ShutdownDelay time.Duration
	// ShutdownTimeout is how long the requests in flight get to finish once the server no
	// longer accepts connections.
	ShutdownTimeout time.Duration
	// ConnContext, when set, derives each connection's context (http.Server.ConnContext).
	ConnContext func(ctx context.Context, c net.Conn) context.Context
	// H2C also accepts HTTP/2 without TLS (prior knowledge) beside HTTP/1.1: the services
	// turn it on for a gateway started with UPSTREAM_HTTP2.
	H2C bool
	// OnShutdown runs when the server stops accepting (http.Server.RegisterOnShutdown), e.g.
	// to end long-lived streams at once instead of at the grace period's end.
	OnShutdown []func()
}

// Server serves one handler with the shared set-up. Make it with New before the handler,
// so that the handler's readiness check can ask Ready (or watch Stopping).
type Server struct {
	cfg      Config
	stopping chan struct{}
	stopOnce sync.Once
}

// New returns a server that has not started.
func New(cfg Config) *Server {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Server{cfg: cfg, stopping: make(chan struct{})}
}

// Stopping is closed when shutdown begins: readiness checks fail from then on.
func (s *Server) Stopping() <-chan struct{} { return s.stopping }

// Ready reports whether shutdown has not begun.
func (s *Server) Ready() bool {
	select {
	case <-s.stopping:
		return false
	default:
		return true
	}
}

// httpServer is the http.Server that Serve runs: the shared limits, the logger and the hooks.
func (s *Server) httpServer(h http.Handler) *http.Server {
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
		ConnContext:       s.cfg.ConnContext,
	}
	if s.cfg.H2C {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
	}
	for _, f := range s.cfg.OnShutdown {
		srv.RegisterOnShutdown(f)
	}
	return srv
}

// Serve serves h on ln until ctx is done or serving fails, then shuts down: Stopping is
// closed (readiness answers 503), the server keeps serving for ShutdownDelay, then stops
// accepting and gives the requests in flight ShutdownTimeout to finish. Request contexts
// are not cancelled by ctx: a request that started is answered. Serve returns nil after a
// clean shutdown, the serving error when serving failed, and an error when requests were
// still running at the grace period's end (they are then cut).
func (s *Server) Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	if onLoopback(ln.Addr()) {
		h = LocalOnly(h)
	}
	srv := s.httpServer(h)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()

	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	s.stopOnce.Do(func() { close(s.stopping) })
	if serveErr != nil {
		_ = srv.Close()
		return fmt.Errorf("serve: %w", serveErr)
	}
	s.cfg.Logger.Info("shutting down", "delay", s.cfg.ShutdownDelay, "grace", s.cfg.ShutdownTimeout)
	if s.cfg.ShutdownDelay > 0 {
		t := time.NewTimer(s.cfg.ShutdownDelay)
		select {
		case <-t.C:
		case serveErr = <-errc:
			t.Stop()
			_ = srv.Close()
			return fmt.Errorf("serve: %w", serveErr)
		}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		_ = srv.Close()
		return fmt.Errorf("shutdown: in-flight requests did not finish within %s: %w", s.cfg.ShutdownTimeout, err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}
