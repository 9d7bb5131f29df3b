package alerts

import (
	"math"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/pkg/freshness"
)

// SensorInfo is what matching and staleness need of a sensor from the catalog.
type SensorInfo struct {
	Lat, Lon  *float64
	ProjectID string
	// IntervalS is the sensor's reporting interval (0: unknown), for the freshness rule.
	IntervalS int
	// LastReadingAt is the catalog's newest reading time (nil: never, or unknown).
	LastReadingAt *time.Time
}

// reading is one stored reading as the evaluation sees it.
type reading struct {
	SensorID string
	At       time.Time
	Values   map[string]float64
	// Lat and Lon are the reading's own position, when it has one.
	Lat, Lon *float64
}

// pendingEvent is an event about to be stored, with what storing it needs.
type pendingEvent struct {
	Event
	keyID   string
	webhook bool
}

// ruleSet indexes the live rules for matching a reading's sensor: by sensor id, and the
// area and project rules that need the sensor's catalog record.
type ruleSet struct {
	bySensor  map[string][]*Rule
	byProject map[string][]*Rule
	area      []*Rule
	stale     []*Rule
	n         int
}

func newRuleSet(rules []Rule) *ruleSet {
	rs := &ruleSet{bySensor: map[string][]*Rule{}, byProject: map[string][]*Rule{}, n: len(rules)}
	for i := range rules {
		r := &rules[i]
		switch t := r.Target; {
		case len(t.SensorIDs) > 0:
			for _, id := range t.SensorIDs {
				rs.bySensor[id] = append(rs.bySensor[id], r)
			}
		case t.ProjectID != "":
			rs.byProject[t.ProjectID] = append(rs.byProject[t.ProjectID], r)
		default:
			rs.area = append(rs.area, r)
		}
		if r.Condition.Op == OpStale {
			rs.stale = append(rs.stale, r)
		}
	}
	return rs
}

// needsInfo says whether matching sensorID needs its catalog record.
func (rs *ruleSet) needsInfo() bool { return len(rs.area) > 0 || len(rs.byProject) > 0 }

// match appends the rules that watch the sensor of rd (info may be nil when not needed or
// not found) to out.
func (rs *ruleSet) match(out []*Rule, rd reading, info *SensorInfo) []*Rule {
	out = append(out, rs.bySensor[rd.SensorID]...)
	if info != nil && info.ProjectID != "" {
		out = append(out, rs.byProject[info.ProjectID]...)
	}
	if len(rs.area) == 0 {
		return out
	}
	lat, lon := rd.Lat, rd.Lon
	if (lat == nil || lon == nil) && info != nil {
		lat, lon = info.Lat, info.Lon
	}
	if lat == nil || lon == nil {
		return out
	}
	for _, r := range rs.area {
		if r.Target.contains(*lat, *lon) {
			out = append(out, r)
		}
	}
	return out
}

func (t Target) contains(lat, lon float64) bool {
	if b := t.BBox; b != nil {
		return lat >= b.MinLat && lat <= b.MaxLat && lon >= b.MinLon && lon <= b.MaxLon
	}
	if n := t.Near; n != nil {
		return haversineKM(lat, lon, n.Lat, n.Lon) <= n.RadiusKM
	}
	return false
}

func haversineKM(lat1, lon1, lat2, lon2 float64) float64 {
	const r = 6371.0088
	rad := math.Pi / 180
	dlat, dlon := (lat2-lat1)*rad, (lon2-lon1)*rad
	a := math.Sin(dlat/2)*math.Sin(dlat/2) + math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dlon/2)*math.Sin(dlon/2)
	return 2 * r * math.Asin(math.Min(1, math.Sqrt(a)))
}

// evaluate applies one reading to the rules that watch its sensor, given their states
// (absent: ok), and returns the states that change and the events they raise. It is pure:
// the same reading and states give the same result, which is what makes a replay after a
// failover safe.
func evaluate(rules []*Rule, states map[string]stateRow, rd reading, now time.Time) ([]stateRow, []pendingEvent) {
	var changed []stateRow
	var events []pendingEvent
	at := rd.At.UnixMilli()
	for _, r := range rules {
		prev, ok := states[r.ID]
		if !ok {
			prev = stateRow{RuleID: r.ID, SensorID: rd.SensorID, State: stateOK}
		}
		next := prev
		var ev *Event
		c := r.Condition
		if c.Op == OpStale {
			// A reading ends staleness at once; its time is what the timer measures from.
			if at < prev.LastMS {
				continue // an older reading arriving late changes nothing
			}
			next.LastMS, next.State, next.SinceMS = at, stateOK, at
			if prev.State == StateFiring {
				ev = newEvent(r, rd.SensorID, StateResolved, "", nil, rd.At, now)
			}
		} else {
			v, ok := rd.Values[c.Parameter]
			if !ok {
				continue
			}
			next.LastMS = max(prev.LastMS, at)
			switch {
			case prev.State == StateFiring:
				if c.clear(v) {
					next.State, next.SinceMS = stateOK, at
					ev = newEvent(r, rd.SensorID, StateResolved, c.Parameter, &v, rd.At, now)
				}
			case c.breached(v):
				since := at
				if prev.State == statePending {
					since = prev.SinceMS
				}
				next.SinceMS = since
				if time.Duration(at-since)*time.Millisecond >= r.forDur {
					next.State = StateFiring
					ev = newEvent(r, rd.SensorID, StateFiring, c.Parameter, &v, rd.At, now)
				} else {
					next.State = statePending
				}
			default:
				next.State, next.SinceMS = stateOK, at
			}
		}
		if next != prev {
			states[r.ID] = next
			changed = append(changed, next)
		}
		if ev != nil {
			events = append(events, pendingEvent{Event: *ev, keyID: r.keyID, webhook: r.WebhookURL != "" && r.WebhookDisabled == nil})
		}
	}
	return changed, events
}

// staleCheck is the timer's verdict for one stale rule over one sensor last heard from at
// last (zero: never): fire when the freshness rule says stale and has said so for the
// rule's duration.
func staleCheck(r *Rule, prev stateRow, last time.Time, intervalS int, now time.Time) (stateRow, *pendingEvent) {
	if prev.State == StateFiring {
		return prev, nil
	}
	var lp *time.Time
	if !last.IsZero() {
		lp = &last
	}
	v := freshness.Rule{}.Assess(lp, intervalS, now)
	if !v.Stale {
		return prev, nil
	}
	staleSince := now
	if lp != nil {
		staleSince = last.Add(time.Duration(v.StaleAfterSeconds) * time.Second)
	}
	if now.Sub(staleSince) < r.forDur {
		return prev, nil
	}
	next := prev
	next.State, next.SinceMS = StateFiring, now.UnixMilli()
	if lp != nil {
		next.LastMS = last.UnixMilli()
	}
	ev := newEvent(r, prev.SensorID, StateFiring, "", nil, last, now)
	return next, &pendingEvent{Event: *ev, keyID: r.keyID, webhook: r.WebhookURL != "" && r.WebhookDisabled == nil}
}

func newEvent(r *Rule, sensorID, state, parameter string, v *float64, readingAt, now time.Time) *Event {
	id, err := uuid.NewV7()
	if err != nil {
		id = uuid.New()
	}
	if v != nil {
		c := *v
		v = &c
	}
	return &Event{ID: id.String(), RuleID: r.ID, SensorID: sensorID, State: state, Parameter: parameter, Value: v,
		ReadingTimestamp: readingAt.UTC().Truncate(time.Millisecond), Timestamp: now.UTC().Truncate(time.Millisecond)}
}
