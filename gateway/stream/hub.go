// Package stream serves the Server-Sent Event streams of new readings (docs/live.md,
// docs/api-decisions.md "Streams"): GET /api/v1/sensors/{id}/readings/stream and GET
// /api/v1/readings/stream.
//
// Each gateway follows each service's log of stored readings once (Hub: one long poll per
// service, not one per client) and fans the readings out in memory to the open streams.
// An event's id is a cursor holding, per service, the log position the client has seen;
// the logs are shared (a Redis Stream per service, or the service's own log), so
// Last-Event-ID resumes on any gateway replica: the gap is replayed from the log, then
// the live feed continues, with every reading exactly once.
package stream

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/jsonbytes"
	"github.com/sensorgate/sensorgate/pkg/obs"
	"github.com/sensorgate/sensorgate/pkg/settings"
)

// Source is one service's log as the gateway reads it (contract.Client.Events).
type Source interface {
	Events(ctx context.Context, after string, limit int, wait time.Duration) (contract.EventsPage, error)
}

// Hub defaults.
const (
	// DefaultWait is the long poll of each follower: a reading reaches the hub as soon as
	// it is logged; the wait only bounds an idle poll.
	DefaultWait = 20 * time.Second
	// DefaultBuffer is how many events a stream may fall behind before it is
	// disconnected as a slow consumer (the others are never held up by it).
	DefaultBuffer = 1024
	followLimit   = 1000
)

// HubOptions configure a Hub.
type HubOptions struct {
	Sources map[string]Source
	Wait    time.Duration
	Buffer  int
	// Backoff is the wait after a failed poll (default 1 s).
	Backoff time.Duration
	Logger  *slog.Logger
	// Delay, when set, records each live event's delay from its service's log position
	// to the hub (stage received) and to each stream's write (stage written): the hops
	// of the delivery promise (obs.Metrics.StreamDelay, docs/live.md).
	Delay *prometheus.HistogramVec
}

// Event is one reading on its way to the streams: Frame is the part of its SSE frame that
// follows the id line ("\ndata: ...\n\n", the data being the readings-page item plus
// sensor_id, external_id and service_id). It is built once per event by the hub and
// shared read-only by every stream it goes to (a burst of 330 readings to 1,000 streams is
// 330,000 frames: docs/live.md "Figures"); its capacity equals its length, so an append
// copies instead of writing into the shared array.
type Event struct {
	Service  string
	Pos      contract.Position
	SensorID string
	Frame    []byte
	// written observes its delay when a stream has written it (the follower's, a
	// discarding one without HubOptions.Delay; nil for a replayed event, never recorded).
	written prometheus.Observer
}

// newEvent renders e's data and frame once.
func newEvent(service string, p contract.Position, e contract.Event) Event {
	return Event{Service: service, Pos: p, SensorID: e.SensorID, Frame: frame(render(service, e))}
}

// Reasons a subscription ends from the hub's side.
var (
	ErrSlow     = errors.New("stream: client too slow, buffer full")
	ErrShutdown = errors.New("stream: gateway shutting down")
)

// Sub is one stream's subscription to some services' events.
type Sub struct {
	C     chan Event
	match func(sensorID string) bool
	done  chan struct{}
	once  sync.Once
	err   error
	hub   *Hub
	svcs  []*follower
}

// Done is closed when the hub ends the subscription (Err says why).
func (s *Sub) Done() <-chan struct{} { return s.done }

// Err is ErrSlow or ErrShutdown once Done is closed.
func (s *Sub) Err() error {
	<-s.done
	return s.err
}

func (s *Sub) kill(err error) {
	s.once.Do(func() {
		s.err = err
		close(s.done)
	})
}

// Close ends the subscription from the stream's side.
func (s *Sub) Close() {
	for _, f := range s.svcs {
		f.mu.Lock()
		delete(f.subs, s)
		f.mu.Unlock()
	}
}

// Hub follows every service's log and fans events out.
type Hub struct {
	o         HubOptions
	followers map[string]*follower
	mu        sync.Mutex
	closed    bool
	stop      chan struct{}
}

type follower struct {
	id  string
	src Source
	mu  sync.Mutex
	// head is the position of the newest event handed out; known once the first poll
	// answered (ready closed).
	head  contract.Position
	ready chan struct{}
	subs  map[*Sub]struct{}
	// received and written observe the delays of StreamDelay; a discarding observer
	// without HubOptions.Delay.
	received, written prometheus.Observer
}

// NewHub returns a hub; Run starts following.
func NewHub(o HubOptions) *Hub {
	settings.Default(&o.Wait, DefaultWait)
	settings.Default(&o.Buffer, DefaultBuffer)
	settings.Default(&o.Backoff, time.Second)
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Hub{o: o, followers: map[string]*follower{}, stop: make(chan struct{})}
	for id, src := range o.Sources {
		f := &follower{id: id, src: src, ready: make(chan struct{}), subs: map[*Sub]struct{}{},
			received: discard{}, written: discard{}}
		if o.Delay != nil {
			f.received = o.Delay.WithLabelValues(id, obs.StreamReceived)
			f.written = o.Delay.WithLabelValues(id, obs.StreamWritten)
		}
		h.followers[id] = f
	}
	return h
}

// Services lists the services the hub follows.
func (h *Hub) Services() []string {
	out := make([]string, 0, len(h.followers))
	for id := range h.followers {
		out = append(out, id)
	}
	return out
}

// Run follows every service until ctx ends or Close.
func (h *Hub) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-h.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	var wg sync.WaitGroup
	for _, f := range h.followers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.follow(ctx, f)
		}()
	}
	wg.Wait()
}

// Close ends every subscription with ErrShutdown (their streams send a last comment and
// end, so clients reconnect to another replica) and refuses new ones.
func (h *Hub) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}
	h.closed = true
	close(h.stop)
	h.mu.Unlock()
	for _, f := range h.followers {
		f.mu.Lock()
		for s := range f.subs {
			s.kill(ErrShutdown)
			delete(f.subs, s)
		}
		f.mu.Unlock()
	}
}

func (h *Hub) follow(ctx context.Context, f *follower) {
	log := h.o.Logger.With("service", f.id)
	var head contract.Position
	started := false
	failures := 0
	for ctx.Err() == nil {
		after, wait := head.String(), h.o.Wait
		if !started {
			after, wait = "", 0
		}
		page, err := f.src.Events(ctx, after, followLimit, wait)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			if failures == 1 || failures%60 == 0 {
				log.Warn("stream: service event log unavailable; retrying", "failures", failures, "err", err)
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(h.o.Backoff):
			}
			continue
		}
		if failures > 0 {
			log.Info("stream: service event log back", "after_failures", failures)
			failures = 0
		}
		if !started {
			last, err := contract.ParsePosition(page.Last)
			if err != nil {
				log.Error("stream: service sent a bad log position", "last", page.Last, "err", err)
				continue
			}
			head, started = last, true
			f.mu.Lock()
			f.head = head
			f.mu.Unlock()
			close(f.ready)
			continue
		}
		if o, err := contract.ParsePosition(page.Oldest); page.Oldest != "" && err == nil && head.Compare(o) < 0 {
			// The entry at head is gone from the log: readings after it may be missing.
			log.Warn("stream: the service log no longer holds this gateway's position; readings in between may be missing from streams",
				"head", head.String(), "oldest", page.Oldest)
		}
		evs := make([]Event, 0, len(page.Events))
		now := time.Now()
		for _, e := range page.Events {
			p, err := contract.ParsePosition(e.Pos)
			if err != nil || p.Compare(head) <= 0 {
				continue
			}
			ev := newEvent(f.id, p, e)
			ev.written = f.written
			evs = append(evs, ev)
			f.received.Observe(delay(p, now))
			head = p
		}
		if len(evs) == 0 {
			continue
		}
		f.broadcast(evs, head)
	}
}

// broadcast hands evs to every matching subscription without ever waiting: a
// subscription whose buffer is full is ended (ErrSlow) and dropped.
func (f *follower) broadcast(evs []Event, head contract.Position) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for s := range f.subs {
		for _, e := range evs {
			if !s.match(e.SensorID) {
				continue
			}
			select {
			case s.C <- e:
			default:
				s.kill(ErrSlow)
				delete(f.subs, s)
			}
			if _, ok := f.subs[s]; !ok {
				break
			}
		}
	}
	f.head = head
}

// Subscribe registers a subscription to services for the sensors match accepts, and
// returns each service's head at that moment: every event after it will arrive on C (an
// event up to it is replayed from the log by the caller). A service whose log has not
// answered yet is absent from heads. ErrShutdown after Close.
func (h *Hub) Subscribe(services []string, match func(sensorID string) bool) (*Sub, map[string]contract.Position, error) {
	h.mu.Lock()
	closed := h.closed
	h.mu.Unlock()
	if closed {
		return nil, nil, ErrShutdown
	}
	s := &Sub{C: make(chan Event, h.o.Buffer), match: match, done: make(chan struct{}), hub: h}
	heads := map[string]contract.Position{}
	for _, id := range services {
		f, ok := h.followers[id]
		if !ok {
			continue
		}
		f.mu.Lock()
		f.subs[s] = struct{}{}
		select {
		case <-f.ready:
			heads[id] = f.head
		default:
		}
		f.mu.Unlock()
		s.svcs = append(s.svcs, f)
	}
	h.mu.Lock()
	if h.closed { // Close ran meanwhile and may have missed s
		h.mu.Unlock()
		s.Close()
		return nil, nil, ErrShutdown
	}
	h.mu.Unlock()
	return s, heads, nil
}

// Follow is Subscribe once the services' logs have answered the hub (a log it has not
// reached yet has no start position), waiting for them at most readyWait: what a readings
// stream and an MCP subscription open with.
func (h *Hub) Follow(ctx context.Context, services []string, match func(sensorID string) bool) (*Sub, map[string]contract.Position, error) {
	deadline := time.NewTimer(readyWait)
	defer deadline.Stop()
	for _, svc := range services {
		select {
		case <-h.Ready(svc):
		case <-deadline.C:
		case <-ctx.Done():
		}
	}
	return h.Subscribe(services, match)
}

// Source returns the log of service id (for replays), or nil.
func (h *Hub) Source(id string) Source {
	if f, ok := h.followers[id]; ok {
		return f.src
	}
	return nil
}

// delay is the seconds from p's logging (its milliseconds of the log's clock: Redis's,
// or the service's) to now, never negative (clocks of different hosts may disagree).
func delay(p contract.Position, now time.Time) float64 {
	return max(0, float64(now.UnixMilli()-int64(p.MS))/1000)
}

// discard is the observer of a hub without HubOptions.Delay.
type discard struct{}

func (discard) Observe(float64) {}

// Ready is closed once service id's log answered its first poll (nil for an unknown id).
func (h *Hub) Ready(id string) <-chan struct{} {
	if f, ok := h.followers[id]; ok {
		return f.ready
	}
	return nil
}

// render is the SSE data of an event: the reading with its sensor's ids in front.
func render(service string, e contract.Event) []byte {
	r := e.Reading
	out := make([]byte, 0, len(r)+160)
	out = append(out, `{"sensor_id":`...)
	out = jsonbytes.AppendString(out, e.SensorID)
	out = append(out, `,"external_id":`...)
	out = jsonbytes.AppendString(out, e.ExternalID)
	out = append(out, `,"service_id":`...)
	out = jsonbytes.AppendString(out, service)
	if len(r) > 2 && r[0] == '{' {
		out = append(out, ',')
		out = append(out, r[1:]...)
	} else {
		out = append(out, '}')
	}
	return out[:len(out):len(out)]
}

// frame is the tail of an event's SSE frame after its id: each line of data as a data:
// field (JSON from the services is one line; split defensively anyway), then the blank
// line that ends the frame.
func frame(data []byte) []byte {
	out := make([]byte, 0, len(data)+16)
	for len(data) > 0 {
		line := data
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			data = nil
		}
		out = append(out, "\ndata: "...)
		out = append(out, line...)
	}
	out = append(out, "\n\n"...)
	return out[:len(out):len(out)]
}
