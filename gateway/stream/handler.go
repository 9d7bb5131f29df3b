package stream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/gateway/latest"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/settings"
)

// Stream defaults (docs/live.md).
const (
	// DefaultHeartbeat: a comment line at least this often keeps proxies from closing an
	// idle stream and lets clients notice a dead one.
	DefaultHeartbeat = 15 * time.Second
	// DefaultRetry is the reconnect delay the stream tells clients (retry:).
	DefaultRetry = 3 * time.Second
	// DefaultWriteTimeout bounds one write to a client; a client that does not take its
	// bytes within it is disconnected.
	DefaultWriteTimeout = 10 * time.Second
	// DefaultMaxSensors bounds the sensors an area stream may select (400 beyond).
	DefaultMaxSensors = 20_000
	// readyWait is how long a new stream waits for a service log that has not answered
	// the gateway yet (its start position is unknown until then).
	readyWait = 2 * time.Second
)

// Store is the part of the catalog the streams read.
type Store interface {
	latest.Lister
	catalog.SensorLookup
}

// Options configure the stream handlers.
type Options struct {
	Hub   *Hub
	Store Store
	// Cap caps the concurrent streams of one key (default NewCap(nil, 0)); the alert
	// stream and MCP subscriptions share it.
	Cap       Cap
	Heartbeat time.Duration
	// FlushInterval, when set, is the least time between two writes to a client
	// (STREAM_FLUSH_INTERVAL); zero writes every batch at once.
	FlushInterval time.Duration
	Retry         time.Duration
	WriteTimeout  time.Duration
	MaxSensors    int
	Logger        *slog.Logger
	// Resolver is the one sensor resolver of every face (nil: one over Store).
	Resolver *catalog.Resolver
}

// Handler serves the streams.
type Handler struct{ o Options }

func (h *Handler) resolve(ctx context.Context, ref string) (catalog.Sensor, error) {
	return h.o.Resolver.Resolve(ctx, ref)
}

// NewHandler returns the handlers.
func NewHandler(o Options) *Handler {
	if o.Cap.Limiter == nil {
		o.Cap = NewCap(nil, o.Cap.Max)
	}
	settings.Default(&o.Heartbeat, DefaultHeartbeat)
	settings.Default(&o.Retry, DefaultRetry)
	settings.Default(&o.WriteTimeout, DefaultWriteTimeout)
	settings.Default(&o.MaxSensors, DefaultMaxSensors)
	if o.Resolver == nil {
		o.Resolver = catalog.NewResolver(o.Store, 0)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Handler{o: o}
}

// Selection is what a stream follows: the services whose logs carry its sensors, and
// the test of a sensor id.
type Selection struct {
	Services []string
	Match    func(sensorID string) bool
}

// SelectSensor is the selection of one sensor (its UUID or external id).
func (h *Handler) SelectSensor(ctx context.Context, idOrExternal string) (Selection, error) {
	ctx, cancel := context.WithTimeout(ctx, catalog.QueryTimeout)
	defer cancel()
	s, err := h.resolve(ctx, idOrExternal)
	if err != nil {
		return Selection{}, err
	}
	id := s.ID.String()
	return Selection{Services: []string{s.ServiceID}, Match: func(sensorID string) bool { return sensorID == id }}, nil
}

// SelectArea is the selection of area q when the stream opens (the sensors of area
// latest); no filter selects every sensor. More than MaxSensors is 400, and so is a qc
// filter: a stream delivers every stored reading as it is, each measurement with its qc.
func (h *Handler) SelectArea(ctx context.Context, q latest.Area) (Selection, error) {
	if !q.QC.All() {
		return Selection{}, apierr.Invalid("qc", "the stream delivers every measurement with its qc; filter on the client, or ask area latest with qc")
	}
	if q.Unfiltered {
		return Selection{Services: h.o.Hub.Services(), Match: func(string) bool { return true }}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, catalog.QueryTimeout)
	defer cancel()
	sensors, total, err := latest.Select(ctx, h.o.Store, q.Filter, 0, h.o.MaxSensors)
	if err != nil {
		return Selection{}, err
	}
	if total > h.o.MaxSensors {
		return Selection{}, apierr.Invalid("sensor_ids", "the filters select %d sensors; a stream follows at most %d: narrow the area or the filters", total, h.o.MaxSensors)
	}
	set := make(map[string]struct{}, len(sensors))
	var services []string
	seen := map[string]bool{}
	for _, s := range sensors {
		set[s.ID.String()] = struct{}{}
		if !seen[s.ServiceID] {
			seen[s.ServiceID] = true
			services = append(services, s.ServiceID)
		}
	}
	return Selection{Services: services, Match: func(sensorID string) bool { _, ok := set[sensorID]; return ok }}, nil
}

// SensorStream serves GET /api/v1/sensors/{id}/readings/stream.
func (h *Handler) SensorStream(c *gin.Context) {
	sel, err := h.SelectSensor(c.Request.Context(), c.Param("id"))
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	h.serve(c, sel)
}

// AreaStream serves GET /api/v1/readings/stream: the sensors the area filters select
// when the stream opens (those of area latest); no filter streams every sensor.
func (h *Handler) AreaStream(c *gin.Context) {
	q, err := latest.ParseArea(c.Request.URL.Query(), latest.MaxLimit)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	sel, err := h.SelectArea(c.Request.Context(), q)
	if err != nil {
		ginerr.Fail(c, err)
		return
	}
	h.serve(c, sel)
}

// Open takes one of the caller's stream slots and subscribes to sel's events: what a
// readings stream and an MCP subscription open with. When it cannot, it has answered c
// (429 at the cap, 502 for a service this gateway does not follow, 503 while shutting
// down) and returns ok false; otherwise close ends the subscription and frees the slot.
func (h *Handler) Open(c *gin.Context, sel Selection) (sub *Sub, heads map[string]contract.Position, close func(), ok bool) {
	for _, svc := range sel.Services {
		if h.o.Hub.Source(svc) == nil {
			ginerr.Fail(c, apierr.New(apierr.UpstreamUnavailable, "service %s is not configured on this gateway", svc))
			return nil, nil, nil, false
		}
	}
	release, ok := h.o.Cap.Acquire(c)
	if !ok {
		return nil, nil, nil, false
	}
	sub, heads, err := h.o.Hub.Follow(c.Request.Context(), sel.Services, sel.Match)
	if errors.Is(err, ErrShutdown) {
		release()
		c.Header("Retry-After", "1")
		ginerr.Fail(c, apierr.New(apierr.UpstreamUnavailable, "this gateway is shutting down; reconnect"))
		return nil, nil, nil, false
	}
	return sub, heads, func() { sub.Close(); release() }, true
}

// Cap is the per-key stream cap the handler counts on.
func (h *Handler) Cap() Cap { return h.o.Cap }

// serve runs one stream: cap, subscription, replay from Last-Event-ID, then live events
// and heartbeats until the client leaves, falls behind, or the gateway shuts down.
func (h *Handler) serve(c *gin.Context, sel Selection) {
	services, match := sel.Services, sel.Match
	var resume Cursor
	if v := c.GetHeader("Last-Event-ID"); v != "" {
		var err error
		if resume, err = ParseCursor(v); err != nil {
			ginerr.Fail(c, apierr.Invalid("Last-Event-ID", "want the id of an event of this API (an opaque cursor), got %q", apierr.Clip(v, 64)))
			return
		}
	}
	sub, heads, closeSub, ok := h.Open(c, sel)
	if !ok {
		return
	}
	defer closeSub()
	ctx := c.Request.Context()

	state := Cursor{}
	for _, svc := range services {
		if p, ok := resume[svc]; ok {
			state[svc] = p
		} else if p, ok := heads[svc]; ok {
			state[svc] = p
		}
	}

	boundSendBuffer(ctx)
	w := &sseWriter{w: c.Writer, rc: http.NewResponseController(c.Writer), timeout: h.o.WriteTimeout}
	hd := c.Writer.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no") // nginx: pass events through unbuffered
	c.Status(http.StatusOK)
	if err := w.raw("retry: " + strconv.FormatInt(h.o.Retry.Milliseconds(), 10) + "\n: sensorgate stream open\n\n"); err != nil {
		return
	}

	// Replay what the client missed: from its cursor up to the head each service had
	// when the subscription started; everything after arrives on sub.C.
	for _, svc := range services {
		from, ok := resume[svc]
		to, known := heads[svc]
		if !ok || !known || from.Compare(to) >= 0 {
			continue
		}
		if err := h.replay(ctx, w, svc, from, to, match, state); err != nil {
			if ctx.Err() == nil && !errors.Is(err, errWrite) {
				h.o.Logger.WarnContext(ctx, "stream: replay failed", "service", svc, "err", err)
				_ = w.raw(": replay of " + svc + " failed; reconnect with the same Last-Event-ID to try again\n\n")
			}
			return
		}
	}

	beat := time.NewTicker(h.o.Heartbeat)
	defer beat.Stop()
	// With FlushInterval, writes to the client are at least that far apart: a reading
	// after a quiet spell goes out at once, the readings of a burst are gathered until
	// the interval has passed (or a batch is full) and sent with one write and one flush.
	// A burst arrives from the services' logs in many small pages, and sending each page
	// to every stream as it comes is one write per page per stream (docs/live.md "the
	// delay hop by hop": off by default, as end to end it did not pay).
	var due <-chan time.Time // while a batch is held: when the interval is over
	for {
		select {
		case e := <-sub.C:
			// Take what is already queued too (bounded); each event still carries its
			// own cursor.
			w.addLive(state, e)
			for more := true; more && w.batchRoom(); {
				select {
				case e := <-sub.C:
					w.addLive(state, e)
				default:
					more = false
				}
			}
			if wait := h.o.FlushInterval - time.Since(w.sent); wait > 0 && w.batchRoom() {
				if due == nil {
					due = time.After(wait)
				}
				continue
			}
			due = nil
			if err := w.send(); err != nil {
				return
			}
		case <-due:
			due = nil
			if err := w.send(); err != nil {
				return
			}
		case <-beat.C:
			if err := w.raw(": keep-alive\n\n"); err != nil {
				return
			}
		case <-sub.Done():
			msg := ": closing: this client fell behind (buffer full); reconnect with Last-Event-ID\n\n"
			if errors.Is(sub.Err(), ErrShutdown) {
				msg = ": closing: gateway shutting down; reconnect with Last-Event-ID\n\n"
			}
			_ = w.raw(msg)
			return
		case <-ctx.Done():
			return
		}
	}
}

// replay sends the events of svc's log in (from, to] that match.
func (h *Handler) replay(ctx context.Context, w *sseWriter, svc string, from, to contract.Position, match func(string) bool, state Cursor) error {
	src := h.o.Hub.Source(svc)
	pos := from
	for pos.Compare(to) < 0 {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		page, err := src.Events(rctx, pos.String(), followLimit, 0)
		cancel()
		if err != nil {
			return fmt.Errorf("read log of %s after %s: %w", svc, pos, err)
		}
		if o, err := contract.ParsePosition(page.Oldest); err == nil && page.Oldest != "" && pos.Compare(o) < 0 && pos == from {
			if err := w.raw(": resume: the cursor is older than the retained log of " + svc + "; readings in between may be missing\n\n"); err != nil {
				return err
			}
		}
		if len(page.Events) == 0 {
			return nil
		}
		for _, e := range page.Events {
			p, err := contract.ParsePosition(e.Pos)
			if err != nil {
				return fmt.Errorf("log of %s: %w", svc, err)
			}
			if p.Compare(to) > 0 {
				return w.send()
			}
			pos = p
			if !match(e.SensorID) {
				state[svc] = p
				continue
			}
			w.add(state, newEvent(svc, p, e))
			if !w.batchRoom() {
				if err := w.send(); err != nil {
					return err
				}
			}
		}
		if err := w.send(); err != nil {
			return err
		}
	}
	return nil
}

var errWrite = errors.New("stream: write to client failed")

// Batches of events: a stream sends what is queued for it with one write and one flush,
// up to this many events or bytes at a time, so that each write still has its own
// WriteTimeout for a bounded amount of data.
const (
	maxBatchEvents = 256
	maxBatchBytes  = 64 << 10
)

// sseWriter writes SSE frames, each write under its own write deadline (the server's
// WriteTimeout would otherwise cut every stream after a fixed time). Its buffer and cursor
// encoder belong to one stream; the frames it copies in are the hub's, shared read-only.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
	buf     []byte
	events  int // in buf
	cursor  cursorEncoder
	// sent is when the last write began (FlushInterval counts from it).
	sent time.Time
	// live are the live events in buf, whose delays are recorded once they are written
	// (HubOptions.Delay); replayed events are not news and are not recorded.
	live []Event
}

func (s *sseWriter) raw(text string) error {
	s.buf = append(s.buf, text...)
	return s.send()
}

// addLive is add for an event of the live feed: skipped when the stream has seen it
// already (a replay covered it).
func (s *sseWriter) addLive(state Cursor, e Event) {
	if p, ok := state[e.Service]; ok && e.Pos.Compare(p) <= 0 {
		return
	}
	s.add(state, e)
	s.live = append(s.live, e)
}

// add appends e's frame with its id: state, the stream's cursor, advanced to e.
func (s *sseWriter) add(state Cursor, e Event) {
	state[e.Service] = e.Pos
	s.buf = append(s.buf, "event: reading\nid: "...)
	s.buf = s.cursor.append(s.buf, state)
	s.buf = append(s.buf, e.Frame...)
	s.events++
}

// batchRoom reports whether the batch may take another event.
func (s *sseWriter) batchRoom() bool {
	return s.events < maxBatchEvents && len(s.buf) < maxBatchBytes
}

// send writes and flushes what add and raw gathered, if anything.
func (s *sseWriter) send() error {
	if len(s.buf) == 0 {
		return nil
	}
	b := s.buf
	s.buf, s.events = s.buf[:0], 0
	s.sent = time.Now()
	_ = s.rc.SetWriteDeadline(s.sent.Add(s.timeout))
	if _, err := s.w.Write(b); err != nil {
		return errWrite
	}
	if err := s.rc.Flush(); err != nil {
		return errWrite
	}
	if len(s.live) > 0 {
		now := time.Now()
		for _, e := range s.live {
			e.written.Observe(delay(e.Pos, now))
		}
		s.live = s.live[:0]
	}
	return nil
}

// sendBuffer is the kernel send buffer of a connection once it carries a stream: small,
// so that a client that stops reading blocks the stream's writes (and is disconnected
// after WriteTimeout) within tens of kilobytes, not after the megabytes of an autotuned
// buffer, which thousands of open streams could not afford either.
const sendBuffer = 64 << 10

type connKey struct{}

// ConnContext is the http.Server ConnContext hook that lets a stream reach its
// connection to bound the send buffer (sendBuffer).
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// boundSendBuffer applies sendBuffer to the request's TCP connection, when the server
// was given ConnContext.
func boundSendBuffer(ctx context.Context) {
	if tc, ok := ctx.Value(connKey{}).(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(sendBuffer)
	}
}
