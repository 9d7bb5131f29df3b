package alerts

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/gateway/stream"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/freshness"
)

// MaxRuleBody bounds the body of POST /alerts/rules (a rule with MaxSensorIDs ids fits).
const MaxRuleBody = 64 << 10

// Page sizes of the event list and the delivery log.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Handlers answer the /api/v1/alerts routes; the router mounts them behind the key check
// and the rate limit.
type Handlers struct {
	Store *Store
	Guard Guard
	// Resolve finds the sensors of a sensor_ids target and Projects the project of a
	// project_id target, when a rule is created (resolveTarget); both are required.
	Resolve  ResolveFunc
	Projects ProjectLookup
	// Quota is the most rules a key may hold.
	Quota func(id auth.Identity) int
	// Stopping is closed when the gateway begins to shut down: open streams end with a
	// last comment (nil: never).
	Stopping <-chan struct{}
	// StreamPoll is how often an open stream looks for new events (default
	// DefaultStreamPoll).
	StreamPoll time.Duration
	// Streams is the per-key cap on open streams that the readings streams and MCP
	// subscriptions share (the zero Cap counts nothing).
	Streams stream.Cap
}

// Routes are the handlers by method and path (relative to /api/v1), for routes.go.
type Route struct {
	Method, Path string
	Handler      gin.HandlerFunc
}

// Routes lists the alert routes.
func (h *Handlers) Routes() []Route {
	out := []Route{
		{http.MethodPost, "/alerts/rules", h.create},
		{http.MethodGet, "/alerts/rules", h.list},
		{http.MethodGet, "/alerts/rules/:id", h.get},
		{http.MethodDelete, "/alerts/rules/:id", h.delete},
		{http.MethodGet, "/alerts/rules/:id/deliveries", h.deliveries},
		{http.MethodGet, "/alerts/events", h.events},
		{http.MethodPost, "/alerts/events/:id/replay", h.replay},
		{http.MethodGet, "/alerts/stream", h.stream},
		{http.MethodPost, "/alerts/rules/:id/rotate-secret", h.rotate},
	}
	return out
}

// Created is the answer to POST /alerts/rules: the rule and, once, its secret.
type Created struct {
	Rule
	WebhookSecret string `json:"webhook_secret,omitempty"`
}

func (h *Handlers) create(c *gin.Context) {
	id, err := auth.Caller(c)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	if ct := c.GetHeader("Content-Type"); ct != "" && !strings.HasPrefix(strings.ToLower(ct), "application/json") {
		ginerr.Fail(c, apierr.New(apierr.UnsupportedMediaType, "send the rule as application/json"))
		return
	}
	var req CreateRequest
	if err := decodeBody(c.Request.Body, &req); err != nil {
		ginerr.Fail(c, err)
		return
	}
	out, err := h.Create(c.Request.Context(), id, req)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.Header("Location", "/api/v1/alerts/rules/"+out.ID)
	c.JSON(http.StatusCreated, out)
}

// Create checks req (fields, that its sensors and project exist for id's key, the
// webhook's address, the key's quota) and stores the rule for id's key: the one path of
// POST /alerts/rules and the MCP tool create_alert_rule.
func (h *Handlers) Create(ctx context.Context, id auth.Identity, req CreateRequest) (Created, error) {
	r, err := req.validate()
	if err != nil {
		return Created{}, err
	}
	if err := h.resolveTarget(ctx, id, &r); err != nil {
		return Created{}, err
	}
	if r.WebhookURL != "" {
		if err := h.Guard.CheckURL(ctx, r.WebhookURL); err != nil {
			return Created{}, err
		}
	}
	r, secret, err := h.Store.CreateRule(ctx, id.KeyIDText, r, h.Quota(id))
	if err != nil {
		return Created{}, err
	}
	return Created{Rule: r, WebhookSecret: secret}, nil
}

// decodeBody reads one JSON object into v, refusing unknown fields and trailing data,
// and names the field at fault.
func decodeBody(body io.Reader, v any) error {
	dec := json.NewDecoder(io.LimitReader(body, MaxRuleBody+1))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te) && te.Field != "":
			return apierr.Invalid(te.Field, "want a JSON %s", te.Type.Kind())
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return apierr.Invalid(strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`), "no such field")
		case errors.Is(err, io.EOF):
			return apierr.Invalid("body", "want a JSON object")
		}
		return apierr.Invalid("body", "not valid JSON: %v", err)
	}
	if dec.More() {
		return apierr.Invalid("body", "want one JSON object and nothing after it")
	}
	return nil
}

func (h *Handlers) list(c *gin.Context) {
	answer(c, http.StatusOK, func(ctx context.Context, key string) (any, error) {
		rules, err := h.Store.Rules(ctx, key)
		return gin.H{"rules": rules}, err
	})
}

func (h *Handlers) get(c *gin.Context) {
	answer(c, http.StatusOK, func(ctx context.Context, key string) (any, error) { return h.Store.Rule(ctx, key, c.Param("id")) })
}

func (h *Handlers) delete(c *gin.Context) {
	id, err := auth.Caller(c)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	if err := h.Store.DeleteRule(c.Request.Context(), id.KeyIDText, c.Param("id")); err != nil {
		ginerr.Fail(c, err)
		return
	}
	c.Status(http.StatusNoContent)
}

func (h *Handlers) deliveries(c *gin.Context) {
	limit, err := parseLimit(c.Query("limit"))
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	answer(c, http.StatusOK, func(ctx context.Context, key string) (any, error) {
		d, err := h.Store.Deliveries(ctx, key, c.Param("id"), limit)
		return gin.H{"deliveries": d}, err
	})
}

// answer answers for the calling key: fn's result as JSON with status, never stored by a
// cache (rules, secrets and events are the caller's own), or the error of either step.
func answer(c *gin.Context, status int, fn func(ctx context.Context, key string) (any, error)) {
	id, err := auth.Caller(c)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	v, err := fn(c.Request.Context(), id.KeyIDText)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	c.Header("Cache-Control", "no-store")
	c.JSON(status, v)
}

func (h *Handlers) events(c *gin.Context) {
	limit, err := parseLimit(c.Query("limit"))
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	var since time.Time
	if s := c.Query("since"); s != "" {
		// The one time parser of the API's since/until (RFC 3339, UTC without an offset).
		if since, err = contract.ParseTime(s); err != nil {
			ginerr.Fail(c, apierr.Invalid("since", "want an RFC 3339 time such as 2026-01-02T15:04:05Z or a date"))
			return
		}
	}
	var after int64
	if s := c.Query("cursor"); s != "" {
		if after, err = strconv.ParseInt(s, 10, 64); err != nil || after < 0 {
			ginerr.Fail(c, apierr.Invalid("cursor", "want the next_cursor of a previous page"))
			return
		}
	}
	answer(c, http.StatusOK, func(ctx context.Context, key string) (any, error) {
		return h.Store.Events(ctx, key, since, after, limit)
	})
}

func (h *Handlers) replay(c *gin.Context) {
	answer(c, http.StatusAccepted, func(ctx context.Context, key string) (any, error) {
		return h.Store.Replay(ctx, key, c.Param("id"))
	})
}

func parseLimit(s string) (int, error) {
	if s == "" {
		return DefaultLimit, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, apierr.Invalid("limit", "want a whole number from 1 to %d", MaxLimit)
	}
	return n, nil
}

// Quotas maps plans to the most rules a key of the plan may hold (ALERT_RULE_QUOTAS).
type Quotas map[string]int

// For is the quota of a key's plan: the plan's own, else "default", else 100.
func (q Quotas) For(id auth.Identity) int {
	if n, ok := q[id.Plan]; ok {
		return n
	}
	if n, ok := q["default"]; ok {
		return n
	}
	return 100
}

// rotateRequest is the body of POST /alerts/rules/{id}/rotate-secret.
type rotateRequest struct {
	Grace string `json:"grace"`
}

// rotated answers it: the new secret (shown once) and until when the old one still signs.
type rotated struct {
	WebhookSecret      string    `json:"webhook_secret"`
	PreviousValidUntil time.Time `json:"previous_valid_until"`
}

func (h *Handlers) rotate(c *gin.Context) {
	var req rotateRequest
	if err := decodeBody(c.Request.Body, &req); err != nil {
		ginerr.Fail(c, err)
		return
	}
	grace, err := freshness.ParseMaxAge(req.Grace)
	if err != nil || !strings.HasPrefix(strings.ToUpper(req.Grace), "P") || grace > MaxRotationGrace {
		ginerr.Fail(c, apierr.Invalid("grace", "want an ISO 8601 duration of at most P7D, e.g. PT1H"))
		return
	}
	answer(c, http.StatusCreated, func(ctx context.Context, key string) (any, error) {
		secret, until, err := h.Store.RotateSecret(ctx, key, c.Param("id"), grace)
		return rotated{WebhookSecret: secret, PreviousValidUntil: until}, err
	})
}
