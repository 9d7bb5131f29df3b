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
	// grid holds the area rules by the cells of gridDeg degrees their box or circle
	// overlaps: a reading is tried against the rules of its cell only (a rule appears
	// once in a cell, in the order of area).
	grid  [gridRows * gridCols][]*Rule
	stale []*Rule
	n     int
}

// The area rules' grid: cells of gridDeg degrees of latitude and longitude.
const (
	gridDeg  = 10
	gridRows = 180 / gridDeg
	gridCols = 360 / gridDeg
	// kmPerDegree is a degree of latitude (and of longitude at the equator).
	kmPerDegree = 111.19
)

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
			rs.index(r)
		}
		if r.Condition.Op == OpStale {
			rs.stale = append(rs.stale, r)
		}
	}
	return rs
}

// index adds area rule r to every grid cell its target's bounds overlap.
func (rs *ruleSet) index(r *Rule) {
	var minLat, maxLat, minLon, maxLon float64
	switch t := r.Target; {
	case t.BBox != nil:
		minLat, maxLat, minLon, maxLon = t.BBox.MinLat, t.BBox.MaxLat, t.BBox.MinLon, t.BBox.MaxLon
	case t.Near != nil:
		dLat := t.Near.RadiusKM / kmPerDegree
		minLat, maxLat = max(t.Near.Lat-dLat, -90), min(t.Near.Lat+dLat, 90)
		// The circle's widest longitude span is at its latitude farthest from the equator;
		// near a pole, or wider than half the globe, it spans every longitude.
		cos := math.Cos(max(math.Abs(minLat), math.Abs(maxLat)) * math.Pi / 180)
		if dLon := t.Near.RadiusKM / (kmPerDegree * cos); cos > 1e-6 && dLon < 180 {
			minLon, maxLon = t.Near.Lon-dLon, t.Near.Lon+dLon
		} else {
			minLon, maxLon = -180, 180
		}
	default:
		return
	}
	// A span past ±180 wraps around (a circle near the antimeridian); one of a full turn or
	// more holds every column.
	c0, c1 := int(math.Floor((minLon+180)/gridDeg)), int(math.Floor((maxLon+180)/gridDeg))
	c1 = min(c1, c0+gridCols-1)
	for row := gridRow(minLat); row <= gridRow(maxLat); row++ {
		for c := c0; c <= c1; c++ {
			cell := &rs.grid[row*gridCols+((c%gridCols)+gridCols)%gridCols]
			if n := len(*cell); n == 0 || (*cell)[n-1] != r {
				*cell = append(*cell, r)
			}
		}
	}
}

// gridRow and gridCol are the cell of a position (the edges +90 and +180 in the last).
func gridRow(lat float64) int { return min(max(int(math.Floor((lat+90)/gridDeg)), 0), gridRows-1) }
func gridCol(lon float64) int { return min(max(int(math.Floor((lon+180)/gridDeg)), 0), gridCols-1) }

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
	for _, r := range rs.grid[gridRow(*lat)*gridCols+gridCol(*lon)] {
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
