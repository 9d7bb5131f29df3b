package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/sensorgate/sensorgate/gateway/stream"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/ttlcache"
)

// Hub is what the evaluator needs of the gateway's stream hub (stream.Hub): the live
// feed of every service's log, and the logs themselves to catch up from the stored cursor.
type Hub interface {
	Services() []string
	Ready(id string) <-chan struct{}
	Subscribe(services []string, match func(sensorID string) bool) (*stream.Sub, map[string]contract.Position, error)
	Source(id string) stream.Source
}

// SensorLookup returns a sensor's catalog record (found false for an unknown sensor).
type SensorLookup func(ctx context.Context, sensorID string) (SensorInfo, bool, error)

// EvaluatorOptions configure an Evaluator.
type EvaluatorOptions struct {
	Store  *Store
	Hub    Hub
	Leader Leader
	// Sensors looks sensors up for area, project and staleness rules (nil: only sensor_ids
	// rules match, and staleness uses the default interval).
	Sensors SensorLookup
	// StaleEvery is the staleness timer's period (default 30 s).
	StaleEvery time.Duration
	// RulesEvery is how often the evaluator checks for created or deleted rules
	// (default 1 s).
	RulesEvery time.Duration
	Logger     *slog.Logger
	Now        func() time.Time
}

// Evaluator applies every stored reading to the rules, exactly once across replicas: only
// the leader (Leader) evaluates, and it advances each service's log cursor in the same
// transaction as the states and events a reading caused, by compare-and-set, so that a
// former leader that has not noticed its loss yet cannot commit twice (ErrFenced).
type Evaluator struct {
	o     EvaluatorOptions
	cache *ttlcache.Cache[string, sensorEntry]
}

type sensorEntry struct {
	info  SensorInfo
	found bool
}

// NewEvaluator returns an evaluator; Run starts it.
func NewEvaluator(o EvaluatorOptions) *Evaluator {
	if o.StaleEvery <= 0 {
		o.StaleEvery = 30 * time.Second
	}
	if o.RulesEvery <= 0 {
		o.RulesEvery = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Evaluator{o: o, cache: ttlcache.New[string, sensorEntry](10*time.Minute, 100_000, 0, nil)}
}

// Run takes part in the leader election until ctx ends, evaluating while it leads.
func (e *Evaluator) Run(ctx context.Context) {
	log := e.o.Logger
	for ctx.Err() == nil {
		lost, release, err := e.o.Leader.Acquire(ctx)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("alerts: leader election failed; retrying", "err", err)
				sleep(ctx, 2*time.Second)
			}
			continue
		}
		log.Info("alerts: this replica evaluates the rules")
		lctx, cancel := context.WithCancel(ctx)
		go func() {
			select {
			case <-lost:
				cancel()
			case <-lctx.Done():
			}
		}()
		err = e.lead(lctx)
		cancel()
		release()
		if ctx.Err() == nil {
			log.Warn("alerts: evaluation stopped; standing for leader again", "err", err)
			sleep(ctx, time.Second)
		}
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// leading is the state of one term as leader.
type leading struct {
	rules   *ruleSet
	version ruleVersion
	// persisted is each service's cursor as stored; seen the newest position evaluated
	// (ahead of persisted by readings that changed nothing).
	persisted, seen map[string]string
	states          map[string]map[string]stateRow // sensor -> rule -> state
	staleTick       string
}

func (e *Evaluator) lead(ctx context.Context) error {
	st := e.o.Store
	services := e.o.Hub.Services()
	for _, id := range services {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-e.o.Hub.Ready(id):
		}
	}
	sub, heads, err := e.o.Hub.Subscribe(services, func(string) bool { return true })
	if err != nil {
		return err
	}
	defer sub.Close()
	l := &leading{persisted: map[string]string{}, seen: map[string]string{}, states: map[string]map[string]stateRow{}}
	if err := e.reloadRules(ctx, l); err != nil {
		return err
	}
	if l.staleTick, err = st.cursor(ctx, staleCursor, "0"); err != nil {
		return err
	}
	// Catch up from each stored cursor to the head the subscription starts after.
	for _, id := range services {
		head := heads[id]
		cur, err := st.cursor(ctx, id, head.String())
		if err != nil {
			return err
		}
		l.persisted[id], l.seen[id] = cur, cur
		if err := e.catchUp(ctx, l, id, head); err != nil {
			return err
		}
	}
	rulesTick := time.NewTicker(e.o.RulesEvery)
	defer rulesTick.Stop()
	staleTick := time.NewTicker(e.o.StaleEvery)
	defer staleTick.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-sub.Done():
			return sub.Err()
		case <-rulesTick.C:
			if err := e.reloadRules(ctx, l); err != nil {
				return err
			}
			if err := e.flushCursors(ctx, l); err != nil {
				return err
			}
		case <-staleTick.C:
			if err := e.checkStale(ctx, l); err != nil {
				return err
			}
		case ev := <-sub.C:
			if err := e.apply(ctx, l, ev.Service, ev.Pos, ev.SensorID, frameData(ev.Frame)); err != nil {
				return err
			}
		}
	}
}

// staleCursor is the cursor row the staleness timer advances (by compare-and-set, like
// the services' cursors) with each tick that raised events.
const staleCursor = "~stale"

func (e *Evaluator) catchUp(ctx context.Context, l *leading, id string, head contract.Position) error {
	src := e.o.Hub.Source(id)
	for {
		cur, err := contract.ParsePosition(l.seen[id])
		if err != nil {
			return fmt.Errorf("alerts: cursor of %s: %w", id, err)
		}
		if cur.Compare(head) >= 0 {
			return nil
		}
		page, err := src.Events(ctx, cur.String(), 1000, 0)
		if err != nil {
			return fmt.Errorf("alerts: catch up on %s: %w", id, err)
		}
		if o, err := contract.ParsePosition(page.Oldest); page.Oldest != "" && err == nil && cur.Compare(o) < 0 {
			e.o.Logger.Warn("alerts: the service log no longer holds the evaluation's position; readings in between were not evaluated",
				"service", id, "cursor", cur.String(), "oldest", page.Oldest)
		}
		if len(page.Events) == 0 {
			return nil
		}
		for _, ev := range page.Events {
			p, err := contract.ParsePosition(ev.Pos)
			if err != nil || p.Compare(head) > 0 {
				return nil
			}
			if err := e.apply(ctx, l, id, p, ev.SensorID, ev.Reading); err != nil {
				return err
			}
		}
	}
}

// frameData is the JSON of a hub event's SSE frame ("\ndata: {...}\n\n").
func frameData(f []byte) []byte {
	f = bytes.TrimPrefix(f, []byte("\ndata: "))
	return bytes.TrimRight(f, "\n")
}

// readingJSON is the part of a stored reading the evaluation reads.
type readingJSON struct {
	Timestamp    time.Time `json:"timestamp"`
	Measurements []struct {
		Parameter string  `json:"parameter"`
		Value     float64 `json:"value"`
	} `json:"measurements"`
	Location *contract.Location `json:"location"`
}

// apply evaluates one log entry of service at pos, once: an entry at or before the
// evaluated position is skipped.
func (e *Evaluator) apply(ctx context.Context, l *leading, service string, pos contract.Position, sensorID string, data []byte) error {
	seen, err := contract.ParsePosition(l.seen[service])
	if err != nil {
		return fmt.Errorf("alerts: cursor of %s: %w", service, err)
	}
	if pos.Compare(seen) <= 0 {
		return nil
	}
	l.seen[service] = pos.String()
	if l.rules.n == 0 {
		return nil
	}
	rd, ok := e.decode(sensorID, data)
	if !ok {
		return nil
	}
	var info *SensorInfo
	if l.rules.needsInfo() {
		info = e.sensor(ctx, sensorID)
	}
	rules := l.rules.match(nil, rd, info)
	if len(rules) == 0 {
		return nil
	}
	states, ok := l.states[sensorID]
	if !ok {
		if states, err = e.o.Store.states(ctx, sensorID); err != nil {
			return err
		}
		l.states[sensorID] = states
	}
	changed, events := evaluate(rules, states, rd, e.o.Now())
	if len(changed) == 0 && len(events) == 0 {
		return nil
	}
	if err := e.o.Store.commit(ctx, service, l.persisted[service], pos.String(), changed, events); err != nil {
		delete(l.states, sensorID) // the in-memory states ran ahead of the store
		return fmt.Errorf("alerts: commit %s %s: %w", service, pos, err)
	}
	l.persisted[service] = pos.String()
	return nil
}

// flushCursors stores the positions evaluated past the stored ones (readings that changed
// nothing), so that a new leader does not evaluate them again.
func (e *Evaluator) flushCursors(ctx context.Context, l *leading) error {
	for id, pos := range l.seen {
		if pos == l.persisted[id] {
			continue
		}
		if err := e.o.Store.commit(ctx, id, l.persisted[id], pos, nil, nil); err != nil {
			return fmt.Errorf("alerts: store cursor of %s: %w", id, err)
		}
		l.persisted[id] = pos
	}
	return nil
}

func (e *Evaluator) decode(sensorID string, data []byte) (reading, bool) {
	var r readingJSON
	if err := json.Unmarshal(data, &r); err != nil || r.Timestamp.IsZero() {
		e.o.Logger.Warn("alerts: unreadable reading in a service log; skipped", "sensor_id", sensorID, "err", err)
		return reading{}, false
	}
	rd := reading{SensorID: sensorID, At: r.Timestamp, Values: make(map[string]float64, len(r.Measurements))}
	for _, m := range r.Measurements {
		rd.Values[m.Parameter] = m.Value
	}
	if r.Location != nil && r.Location.Type == "Point" {
		lon, lat := r.Location.Coordinates[0], r.Location.Coordinates[1]
		rd.Lat, rd.Lon = &lat, &lon
	}
	return rd, true
}

func (e *Evaluator) sensor(ctx context.Context, id string) *SensorInfo {
	if e.o.Sensors == nil {
		return nil
	}
	now := time.Now()
	if v, _, ok := e.cache.Get(id, now); ok {
		if !v.found {
			return nil
		}
		return &v.info
	}
	info, found, err := e.o.Sensors(ctx, id)
	if err != nil {
		e.o.Logger.Warn("alerts: sensor lookup failed; area and project rules skip this reading", "sensor_id", id, "err", err)
		return nil
	}
	e.cache.Put(id, sensorEntry{info: info, found: found}, now, now)
	if !found {
		return nil
	}
	return &info
}

func (e *Evaluator) reloadRules(ctx context.Context, l *leading) error {
	v, err := e.o.Store.ruleVersion(ctx)
	if err != nil {
		return err
	}
	if l.rules != nil && v == l.version {
		return nil
	}
	rules, v, err := e.o.Store.liveRules(ctx)
	if err != nil {
		return err
	}
	l.rules, l.version = newRuleSet(rules), v
	l.states = map[string]map[string]stateRow{} // deleted rules' states are gone from the store
	return nil
}

// checkStale runs the staleness timer: every stale rule over every sensor it watches
// (listed sensors, and those of area and project rules that have reported since the
// rule was made).
func (e *Evaluator) checkStale(ctx context.Context, l *leading) error {
	if len(l.rules.stale) == 0 {
		return nil
	}
	now := e.o.Now()
	var changed []stateRow
	var events []pendingEvent
	for _, r := range l.rules.stale {
		rows, err := e.o.Store.ruleStates(ctx, r.ID)
		if err != nil {
			return err
		}
		for _, id := range r.Target.SensorIDs {
			if _, ok := rows[id]; !ok {
				rows[id] = stateRow{RuleID: r.ID, SensorID: id, State: stateOK}
			}
		}
		for id, prev := range rows {
			var last time.Time
			if prev.LastMS > 0 {
				last = time.UnixMilli(prev.LastMS)
			}
			interval := 0
			if info := e.sensor(ctx, id); info != nil {
				interval = info.IntervalS
				if info.LastReadingAt != nil && info.LastReadingAt.After(last) {
					last = *info.LastReadingAt
				}
			}
			next, ev := staleCheck(r, prev, last, interval, now)
			if ev != nil {
				changed = append(changed, next)
				events = append(events, *ev)
			}
		}
	}
	if len(events) == 0 {
		return nil
	}
	tick := fmt.Sprint(now.UnixMilli())
	if err := e.o.Store.commit(ctx, staleCursor, l.staleTick, tick, changed, events); err != nil {
		if errors.Is(err, ErrFenced) {
			return err
		}
		return fmt.Errorf("alerts: staleness events: %w", err)
	}
	l.staleTick = tick
	for _, c := range changed {
		if m := l.states[c.SensorID]; m != nil {
			m[c.RuleID] = c
		}
	}
	return nil
}
