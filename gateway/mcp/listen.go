package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/latest"
	"github.com/sensorgate/sensorgate/gateway/stream"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
	"github.com/sensorgate/sensorgate/pkg/mcpproto"
)

// subscriptions/listen (2026-07-28, SEP-2575): the client POSTs one listen request naming
// the resources it wants to hear about; the answer is an event stream that opens with
// notifications/subscriptions/acknowledged (what the gateway agreed to), then carries a
// notifications/resources/updated for a resource whenever it changes, and ends with the
// listen request's result when the gateway shuts down (the client listens again, on any
// replica). Closing the connection ends the subscription.
//
// The readings resources change when their service logs a reading: the subscription is
// fed by the same hub as the SSE streams (gateway/stream), counts against the same
// per-key cap, and is told of a reading exactly when an SSE stream of the same sensors
// would send it. The alert events resource changes when the key's rules raise an event,
// seen by the alert stream's own poll of the alert store.
//
// The older protocols' resources/subscribe needs a session to send notifications on;
// the gateway answers every POST on its own and keeps no session, so those clients
// read the resources instead (the scope advertises subscribe only in server/discover).

const (
	methodSubscriptionsListen = "subscriptions/listen"
	notifySubscriptionsAck    = "notifications/subscriptions/acknowledged"
	notifyResourceUpdated     = "notifications/resources/updated"
	metaSubscriptionID        = mcpproto.MetaSubscriptionID
	// listenHeartbeat is how often an idle subscription sends a comment, so that proxies
	// keep it open and a dead client is noticed.
	listenHeartbeat = 15 * time.Second
	// listenWriteTimeout bounds one write to the client, as for the SSE streams.
	listenWriteTimeout = stream.DefaultWriteTimeout
)

// subscriptionSet is the notifications object of a listen request and of its
// acknowledgement.
type subscriptionSet struct {
	ToolsListChanged      bool     `json:"toolsListChanged,omitempty"`
	PromptsListChanged    bool     `json:"promptsListChanged,omitempty"`
	ResourcesListChanged  bool     `json:"resourcesListChanged,omitempty"`
	ResourceSubscriptions []string `json:"resourceSubscriptions,omitempty"`
}

type listenParams struct {
	Notifications *subscriptionSet `json:"notifications"`
}

// watch is one subscribed resource: the readings of the sensors its selection accepts
// (readings resources), or the key's alert events.
type watch struct {
	uri    string
	sel    stream.Selection
	alerts bool
}

// subscribable says which URIs a subscription may name, for error messages.
const subscribable = "/api/v1/catalog/mcp subscribes to " + SensorLatestURITemplate + " and " + AreaLatestURI +
	"[?<the query of GET /api/v1/readings/latest>], /api/v1/alerts/mcp to " + AlertEventsURI

// listen answers subscriptions/listen. An invalid request is answered as JSON; an
// accepted one as an event stream that lasts until the client leaves or the gateway
// stops.
func (h *Handler) listen(c *gin.Context, sc *scope, info requestInfo, req *jsonrpc.Request) {
	ctx := c.Request.Context()
	if !info.stateless {
		h.reply(c, jsonrpc.NewError(req.ID, jsonrpc.Errorf(jsonrpc.CodeMethodNotFound,
			"method %q is part of protocol %s only: send params._meta[%q] = %q", methodSubscriptionsListen, StatelessProtocolVersion, metaProtocolVersion, StatelessProtocolVersion)))
		return
	}
	var p listenParams
	if err := decodeObject(req.Params, &p); err != nil {
		h.reply(c, jsonrpc.NewError(req.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: subscriptions/listen: %v", err)))
		return
	}
	if p.Notifications == nil {
		h.reply(c, jsonrpc.NewError(req.ID, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: subscriptions/listen: params.notifications is required")))
		return
	}
	// The gateway's tool, prompt and resource lists do not change while it runs: only
	// resource subscriptions are agreed to.
	var watches []watch
	agreed := subscriptionSet{}
	for _, uri := range p.Notifications.ResourceSubscriptions {
		w, err := h.watchOf(ctx, sc, uri)
		if err != nil {
			var je *jsonrpc.Error
			if !errors.As(err, &je) {
				e := apierr.From(err)
				if e.Code == apierr.Internal {
					h.log.ErrorContext(ctx, "mcp subscription failed", "uri", clip(uri, 200), "err", err)
				}
				je = jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: resource %q: %s", clip(uri, 200), e.Message).WithData(e)
			}
			h.reply(c, jsonrpc.NewError(req.ID, je))
			return
		}
		watches = append(watches, w)
		agreed.ResourceSubscriptions = append(agreed.ResourceSubscriptions, uri)
	}

	var hub []watch
	var alertURIs []string
	for _, w := range watches {
		if w.alerts {
			alertURIs = append(alertURIs, w.uri)
			continue
		}
		hub = append(hub, w)
	}
	var events <-chan stream.Event
	var ended <-chan struct{}
	var sub *stream.Sub
	if len(watches) > 0 {
		var closeSub func()
		var ok bool
		if sub, _, closeSub, ok = h.streams.Open(c, unionOf(hub)); !ok {
			return
		}
		defer closeSub()
		events, ended = sub.C, sub.Done()
	}
	var alertKey string
	var lastAlert int64
	if len(alertURIs) > 0 {
		id, ok := auth.FromContext(ctx)
		if !ok {
			h.fail(c, apierr.New(apierr.MissingAPIKey, "the alert events belong to an API key: send x-api-key"))
			return
		}
		alertKey = id.KeyIDText
		var err error
		if lastAlert, err = h.alerts.Store.LastSeq(ctx, alertKey); err != nil {
			h.fail(c, err)
			return
		}
	}

	w := newEventWriter(c.Writer)
	hd := c.Writer.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	c.Status(http.StatusOK)
	subID := json.RawMessage(req.ID.String())
	if err := w.message(notification(notifySubscriptionsAck, map[string]any{"notifications": agreed, "_meta": map[string]any{metaSubscriptionID: subID}})); err != nil {
		return
	}
	h.metrics.subscriptions.Inc()
	defer h.metrics.subscriptions.Dec()
	if len(watches) == 0 {
		// Nothing to listen to: the subscription ends at once, as the go-sdk's does.
		_ = w.message(listenResult(req.ID, subID))
		return
	}

	beat := time.NewTicker(listenHeartbeat)
	defer beat.Stop()
	var poll <-chan time.Time
	if alertKey != "" {
		t := time.NewTicker(h.alerts.Poll())
		defer t.Stop()
		poll = t.C
	}
	updated := func(uri string) error {
		return w.message(notification(notifyResourceUpdated, map[string]any{"uri": uri, "_meta": map[string]any{metaSubscriptionID: subID}}))
	}
	for {
		select {
		case e := <-events:
			// A burst is one notification per resource: take what is queued already.
			changed := map[string]bool{}
			mark := func(e stream.Event) {
				for _, hw := range hub {
					if hw.sel.Match(e.SensorID) {
						changed[hw.uri] = true
					}
				}
			}
			mark(e)
			for more := true; more; {
				select {
				case e := <-events:
					mark(e)
				default:
					more = false
				}
			}
			for _, hw := range hub { // in the order they were asked for
				if changed[hw.uri] {
					if err := updated(hw.uri); err != nil {
						return
					}
				}
			}
		case <-poll:
			n, err := h.alerts.Store.LastSeq(ctx, alertKey)
			if err != nil {
				if ctx.Err() == nil {
					h.log.WarnContext(ctx, "mcp subscription: alert store unavailable", "err", err)
				}
				continue // the next poll tries again; nothing is lost, the events are stored
			}
			if n > lastAlert {
				lastAlert = n
				for _, uri := range alertURIs {
					if err := updated(uri); err != nil {
						return
					}
				}
			}
		case <-beat.C:
			if err := w.comment("keep-alive"); err != nil {
				return
			}
		case <-ended:
			if errors.Is(sub.Err(), stream.ErrSlow) {
				_ = w.message(jsonrpc.NewError(req.ID, jsonrpc.Errorf(jsonrpc.CodeInternalError, "subscription ended: this client fell behind; listen again")))
				return
			}
			_ = w.message(listenResult(req.ID, subID))
			return
		case <-h.stopping:
			_ = w.message(listenResult(req.ID, subID))
			return
		case <-ctx.Done():
			return
		}
	}
}

// watchOf resolves one subscribed URI of scope sc. A URI this endpoint cannot watch is a
// *jsonrpc.Error; a selection that fails (an unknown sensor, a bad query) is the
// *apierr.Error REST would answer.
func (h *Handler) watchOf(ctx context.Context, sc *scope, uri string) (watch, error) {
	if !sc.hasResources() || h.streams == nil {
		return watch{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: this endpoint has no subscribable resources; %s", subscribable)
	}
	if sc.kind == "alerts" {
		if uri == AlertEventsURI {
			return watch{uri: uri, alerts: true}, nil
		}
		return watch{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: resource %q cannot be subscribed here; %s", clip(uri, 200), subscribable)
	}
	switch {
	case strings.HasPrefix(uri, sensorURIPrefix) && strings.HasSuffix(uri, latestSuffix):
		id := strings.TrimSuffix(strings.TrimPrefix(uri, sensorURIPrefix), latestSuffix)
		if id == "" || strings.Contains(id, "/") {
			break
		}
		sel, err := h.streams.SelectSensor(ctx, id)
		return watch{uri: uri, sel: sel}, err
	case uri == AreaLatestURI || strings.HasPrefix(uri, AreaLatestURI+"?"):
		_, rawQuery, _ := strings.Cut(uri, "?")
		v, err := url.ParseQuery(rawQuery)
		if err != nil {
			return watch{}, apierr.Invalid("uri", "the query of %s is not a URL query: %v", AreaLatestURI, err)
		}
		q, err := latest.ParseArea(v, latest.MaxLimit)
		if err != nil {
			return watch{}, err
		}
		sel, err := h.streams.SelectArea(ctx, q)
		return watch{uri: uri, sel: sel}, err
	}
	return watch{}, jsonrpc.Errorf(jsonrpc.CodeInvalidParams, "invalid params: resource %q cannot be subscribed; subscribable are %s", clip(uri, 200), subscribable)
}

// unionOf is the selection of every readings watch together: one hub subscription per
// listen request.
func unionOf(ws []watch) stream.Selection {
	seen := map[string]bool{}
	var services []string
	for _, w := range ws {
		for _, s := range w.sel.Services {
			if !seen[s] {
				seen[s] = true
				services = append(services, s)
			}
		}
	}
	return stream.Selection{Services: services, Match: func(id string) bool {
		for _, w := range ws {
			if w.sel.Match(id) {
				return true
			}
		}
		return false
	}}
}

func notification(method string, params any) *jsonrpc.Request {
	b, _ := json.Marshal(params) // maps of strings and raw JSON: always marshal
	return &jsonrpc.Request{Method: method, Params: b}
}

// listenResult is the listen request's answer: the subscription ended gracefully.
func listenResult(id jsonrpc.ID, subID json.RawMessage) *jsonrpc.Response {
	return mustResult(id, map[string]any{"resultType": "complete", "_meta": map[string]any{metaSubscriptionID: subID}})
}

// eventWriter writes JSON-RPC messages as SSE events, each write under its own deadline.
type eventWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newEventWriter(w http.ResponseWriter) *eventWriter {
	return &eventWriter{w: w, rc: http.NewResponseController(w)}
}

func (e *eventWriter) message(msg any) error {
	b, err := json.Marshal(msg)
	if err != nil {
		return err
	}
	return e.write(append(append([]byte("event: message\ndata: "), b...), "\n\n"...))
}

func (e *eventWriter) comment(text string) error {
	return e.write([]byte(": " + text + "\n\n"))
}

func (e *eventWriter) write(b []byte) error {
	_ = e.rc.SetWriteDeadline(time.Now().Add(listenWriteTimeout))
	if _, err := e.w.Write(b); err != nil {
		return err
	}
	return e.rc.Flush()
}
