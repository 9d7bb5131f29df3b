package obs

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strings"

	"go.opentelemetry.io/otel/trace"
)

// Log formats.
const (
	FormatJSON = "json"
	FormatText = "text"
)

// LogConfig selects a logger. Zero values mean: JSON in production, text elsewhere, level
// info.
type LogConfig struct {
	Format string // json | text | "" (by Env)
	Level  string // debug | info | warn | error | "" (info)
	Env    string // production | development | ...
}

// LogConfigFromEnv reads LOG_FORMAT and LOG_LEVEL through getenv; env is the binary's own
// environment name (its configuration decides it).
func LogConfigFromEnv(getenv func(string) string, env string) LogConfig {
	return LogConfig{Format: getenv("LOG_FORMAT"), Level: getenv("LOG_LEVEL"), Env: env}
}

// ParseLevel parses a level name; "" is info.
func ParseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, fmt.Errorf("log level %q: want debug, info, warn or error", s)
}

// NewLogger returns a logger writing to w whose every line logged with a context (the
// *Context methods) carries that request's request_id, key_id, trace_id and span_id, and
// whose attributes named like secrets (api_key, x-api-key, authorization, password, token,
// secret) are redacted, so a key can never reach a log by accident.
func NewLogger(w io.Writer, c LogConfig) (*slog.Logger, error) {
	level, err := ParseLevel(c.Level)
	if err != nil {
		return nil, err
	}
	format := strings.ToLower(strings.TrimSpace(c.Format))
	if format == "" {
		format = FormatText
		if strings.EqualFold(c.Env, "production") || strings.EqualFold(c.Env, "prod") {
			format = FormatJSON
		}
	}
	opts := &slog.HandlerOptions{Level: level, ReplaceAttr: redact}
	var h slog.Handler
	switch format {
	case FormatJSON:
		h = slog.NewJSONHandler(w, opts)
	case FormatText:
		h = slog.NewTextHandler(w, opts)
	default:
		return nil, fmt.Errorf("log format %q: want json or text", c.Format)
	}
	return slog.New(NewContextHandler(h)), nil
}

// secretKeys are attribute keys whose values are never written.
var secretKeys = map[string]bool{
	"api_key": true, "apikey": true, "x-api-key": true, "x_api_key": true, "key": true,
	"authorization": true, "password": true, "token": true, "secret": true,
	"internal_token": true, "x-internal-token": true,
}

// redact blanks attributes named like secrets, and in every other string or error value
// masks what looks like one: an API key (sg_dev_..., sg_live_...: its display prefix is
// kept) and the password of a URL (postgres://user:pass@host). A key pasted into a query, a
// DATABASE_URL in an error message: neither reaches a log whole.
func redact(_ []string, a slog.Attr) slog.Attr {
	if secretKeys[strings.ToLower(a.Key)] {
		return slog.String(a.Key, "[redacted]")
	}
	switch a.Value.Kind() {
	case slog.KindString:
		if v := a.Value.String(); mayHoldSecret(v) {
			return slog.String(a.Key, Scrub(v))
		}
	case slog.KindAny:
		if err, ok := a.Value.Any().(error); ok && err != nil {
			if v := err.Error(); mayHoldSecret(v) {
				return slog.String(a.Key, Scrub(v))
			}
		}
	}
	return a
}

// mayHoldSecret is the cheap test before Scrub's expressions: most values hold neither.
func mayHoldSecret(s string) bool {
	return strings.Contains(s, "sg_") || strings.Contains(s, "://")
}

var (
	apiKeyRE  = regexp.MustCompile(`\b(sg_(?:dev|live)_[0-9A-Za-z]{4})[0-9A-Za-z]+`)
	urlPassRE = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)[^@\s]+@`)
)

// Scrub masks API keys (keeping their display prefix) and URL passwords in s.
func Scrub(s string) string {
	s = apiKeyRE.ReplaceAllString(s, "${1}…[redacted]")
	return urlPassRE.ReplaceAllString(s, "${1}[redacted]@")
}

// ContextHandler adds the request's ids from the context to every record.
type ContextHandler struct{ next slog.Handler }

// NewContextHandler wraps next.
func NewContextHandler(next slog.Handler) *ContextHandler { return &ContextHandler{next: next} }

// Enabled implements slog.Handler.
func (h *ContextHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.next.Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (h *ContextHandler) Handle(ctx context.Context, r slog.Record) error {
	if ri := info(ctx); ri != nil {
		ri.mu.Lock()
		id, key := ri.id, ri.keyID
		ri.mu.Unlock()
		if id != "" {
			r.AddAttrs(slog.String("request_id", id))
		}
		if key != "" {
			r.AddAttrs(slog.String("key_id", key))
		}
	}
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.next.Handle(ctx, r)
}

// WithAttrs implements slog.Handler.
func (h *ContextHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &ContextHandler{next: h.next.WithAttrs(as)}
}

// WithGroup implements slog.Handler.
func (h *ContextHandler) WithGroup(name string) slog.Handler {
	return &ContextHandler{next: h.next.WithGroup(name)}
}
