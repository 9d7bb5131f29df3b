package tools

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The text renderings are for people and language models reading the first content
// block: short, one fact per line, every number with its unit and every time with its age.

func fmtNum(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func fmtAge(sec int64) string {
	d := time.Duration(sec) * time.Second
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", sec)
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	default:
		return fmt.Sprintf("%dd%02dh", int(d.Hours())/24, int(d.Hours())%24)
	}
}

func fmtFresh(f Freshness) string {
	state := "fresh"
	if f.Stale {
		state = fmt.Sprintf("STALE, expected every %ds", f.ReportingIntervalS)
	}
	return fmt.Sprintf("%s (age %s, %s)", f.Timestamp, fmtAge(f.AgeSeconds), state)
}

// unitSymbols are the text forms of canonical units that have a usual symbol; the
// structured output keeps the canonical unit names.
var unitSymbols = map[string]string{"celsius": "°C", "degrees": "°"}

func fmtUnit(u string) string {
	if s, ok := unitSymbols[u]; ok {
		return s
	}
	return u
}

func fmtValue(v *Quantity) string {
	s := fmtNum(v.Value) + " " + fmtUnit(v.Unit)
	if v.Stale {
		s += fmt.Sprintf(" (observed %s, age %s, STALE)", v.ObservedAt, fmtAge(v.AgeSeconds))
	}
	return s
}

func stationTitle(r StationRef) string {
	return fmt.Sprintf("%s station %s (%s), sensor_id %s", r.ServiceID, r.ExternalID, r.Name, r.SensorID)
}

func fmtProvenance(p Provenance) string {
	s := fmt.Sprintf("provenance: service_id=%s source_id=%s provider=%s sensor_id=%s", p.ServiceID, p.SourceID, p.Provider, p.SensorID)
	if p.FetchedAt != "" {
		s += " fetched_at=" + p.FetchedAt
	}
	return s
}

func fmtMeasurement(m Measurement) string {
	s := fmt.Sprintf("%s = %s %s", m.Parameter, fmtNum(m.Value), m.Unit)
	if m.UnitOriginal != "" && m.UnitOriginal != m.Unit {
		s += fmt.Sprintf(" (source: %s %s)", fmtNum(m.ValueOriginal), m.UnitOriginal)
	}
	return s
}

func renderLatest(o LatestObservation) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Latest observation of %s\n", stationTitle(o.Station))
	fmt.Fprintf(&b, "observed at %s\n", fmtFresh(o.Freshness))
	if len(o.Measurements) == 0 {
		b.WriteString("no values for the requested parameters\n")
	}
	for _, m := range o.Measurements {
		fmt.Fprintf(&b, "  %s\n", fmtMeasurement(m))
	}
	if o.Location != nil {
		fmt.Fprintf(&b, "location: %s, %s\n", fmtNum(o.Location.Latitude), fmtNum(o.Location.Longitude))
	}
	b.WriteString(fmtProvenance(o.Provenance))
	return b.String()
}

func renderObservations(o Observations) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Observations of %s\n", stationTitle(o.Station))
	rng := "all time"
	if o.Range.Since != "" || o.Range.Until != "" {
		rng = fmt.Sprintf("[%s, %s)", orDash(o.Range.Since), orDash(o.Range.Until))
	}
	p := o.Pagination
	fmt.Fprintf(&b, "range %s, sort %s, page %d of %d (%d readings, %d per page)\n", rng, o.Sort, p.Page, p.TotalPages, p.Total, p.Limit)
	if o.Newest != nil {
		fmt.Fprintf(&b, "newest on this page: %s\n", fmtFresh(*o.Newest))
	}
	params := make([]string, 0, len(o.Units))
	for k := range o.Units {
		params = append(params, k)
	}
	sort.Strings(params)
	if len(o.Readings) == 0 {
		b.WriteString("no readings in this range/page\n")
	} else {
		cols := make([]string, 0, len(params))
		for _, k := range params {
			cols = append(cols, k+" ["+o.Units[k]+"]")
		}
		fmt.Fprintf(&b, "timestamp | %s\n", strings.Join(cols, " | "))
		for _, r := range o.Readings {
			vals := map[string]string{}
			for _, m := range r.Measurements {
				vals[m.Parameter] = fmtNum(m.Value)
			}
			row := make([]string, 0, len(params))
			for _, k := range params {
				row = append(row, orDash(vals[k]))
			}
			fmt.Fprintf(&b, "%s | %s\n", r.Timestamp, strings.Join(row, " | "))
		}
	}
	b.WriteString(fmtProvenance(o.Provenance))
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func renderStationList(o StationList) string {
	var b strings.Builder
	p := o.Pagination
	fmt.Fprintf(&b, "%d stations of service %s match", p.Total, o.ServiceID)
	if f := o.Filters; f.Near != nil {
		fmt.Fprintf(&b, " within %s km of %s, %s (nearest first)", fmtNum(f.Near.RadiusKM), fmtNum(f.Near.Latitude), fmtNum(f.Near.Longitude))
	}
	if o.Filters.Feed != "" {
		fmt.Fprintf(&b, " in feed %s", o.Filters.Feed)
	}
	fmt.Fprintf(&b, "; page %d of %d\n", p.Page, p.TotalPages)
	for _, s := range o.Stations {
		fmt.Fprintf(&b, "- %s %s (%s, %s, %s)", s.ExternalID, s.Name, s.SensorType, s.Status, s.Provider)
		if s.DistanceKM != nil {
			fmt.Fprintf(&b, " %s km away", fmtNum(*s.DistanceKM))
		}
		if s.LastReadingAt != "" {
			fmt.Fprintf(&b, ", last reading %s (age %s", s.LastReadingAt, fmtAge(*s.AgeSeconds))
			if *s.Stale {
				b.WriteString(", STALE")
			}
			b.WriteString(")")
		} else {
			b.WriteString(", no readings yet")
		}
		fmt.Fprintf(&b, "; reports %s; sensor_id %s\n", strings.Join(s.DataTypes, ", "), s.SensorID)
	}
	return strings.TrimRight(b.String(), "\n")
}

func renderDescription(o StationDescription) string {
	var b strings.Builder
	s := o.Station
	fmt.Fprintf(&b, "Station %s: %s\n", s.ExternalID, s.Name)
	if s.Description != "" {
		fmt.Fprintf(&b, "%s\n", s.Description)
	}
	fmt.Fprintf(&b, "type %s, status %s, provider %s, feed %s, reports every %ds\n", s.SensorType, s.Status, s.Provider, s.Feed, s.ReportingIntervalS)
	if s.Latitude != nil && s.Longitude != nil {
		fmt.Fprintf(&b, "location: %s, %s\n", fmtNum(*s.Latitude), fmtNum(*s.Longitude))
	} else {
		b.WriteString("location: unknown\n")
	}
	if s.DeploymentDate != "" {
		fmt.Fprintf(&b, "deployed %s\n", s.DeploymentDate)
	}
	if s.DecommissionedDate != nil {
		fmt.Fprintf(&b, "decommissioned %s\n", *s.DecommissionedDate)
	}
	b.WriteString("parameters:\n")
	for _, p := range o.Parameters {
		fmt.Fprintf(&b, "  %s [%s] %s\n", p.Parameter, p.Unit, p.Meaning)
	}
	if o.Latest != nil {
		fmt.Fprintf(&b, "newest reading: %s\n", fmtFresh(*o.Latest))
	} else {
		b.WriteString("no readings yet\n")
	}
	fmt.Fprintf(&b, "tools: %s\n", strings.Join(o.Tools, ", "))
	b.WriteString(fmtProvenance(o.Provenance))
	return b.String()
}
