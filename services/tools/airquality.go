package tools

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/aqi"
)

// AQI methods: how the index of an aqi result was obtained.
const (
	// AQIMethodNowCast: the EPA NowCast of the last 12 hourly PM2.5 averages, the way
	// AirNow reports the current AQI.
	AQIMethodNowCast = "pm2_5_nowcast"
	// AQIMethodHourly: the newest hourly PM2.5 average, when fewer than two of the three
	// most recent hours have data (NowCast undefined).
	AQIMethodHourly = "pm2_5_latest_hour"
	// AQIMethodReported: the AQI the provider reported, when the station has no PM2.5.
	AQIMethodReported = "reported"
)

// nowCastWindow is the EPA NowCast span.
const nowCastWindow = 12 * time.Hour

// AQIResult is the output of airquality.aqi.
type AQIResult struct {
	domainHead
	AQI           int        `json:"aqi" jsonschema:"US EPA Air Quality Index (0-500)"`
	Category      string     `json:"category" jsonschema:"EPA category: Good, Moderate, Unhealthy for Sensitive Groups, Unhealthy, Very Unhealthy, Hazardous"`
	HealthMessage string     `json:"health_message" jsonschema:"EPA statement of who is affected at this category"`
	Advice        string     `json:"advice" jsonschema:"EPA cautionary statement for particle pollution at this category"`
	Color         string     `json:"color" jsonschema:"EPA colour of the category"`
	Method        string     `json:"method" jsonschema:"pm2_5_nowcast, pm2_5_latest_hour or reported"`
	Pollutant     string     `json:"pollutant" jsonschema:"canonical parameter the index was computed from (aqi when reported)"`
	Concentration *Quantity  `json:"concentration,omitempty" jsonschema:"the PM2.5 concentration the index was computed from (NowCast or hourly average), µg/m³"`
	HoursUsed     int        `json:"hours_used,omitempty" jsonschema:"hourly averages that went into the concentration"`
	PM25          *Quantity  `json:"pm2_5,omitempty" jsonschema:"newest PM2.5 reading, µg/m³"`
	PM10          *Quantity  `json:"pm10,omitempty" jsonschema:"newest PM10 reading, µg/m³"`
	Ozone         *Quantity  `json:"ozone,omitempty" jsonschema:"newest ozone reading, ppb"`
	ReportedAQI   *Quantity  `json:"reported_aqi,omitempty" jsonschema:"AQI as the provider reported it, when it did"`
	Missing       []string   `json:"missing" jsonschema:"pollutants the station did not report in the window"`
	WindowHours   float64    `json:"window_hours"`
	Provenance    Provenance `json:"provenance"`
}

func addAQI(srv *mcp.Server, ts *toolset) error {
	return add(srv, ts, ToolAQI, "Air Quality Index",
		"US EPA AQI of a monitor from PM2.5 (12-hour NowCast, 2024 breakpoints) with category and health message, "+
			"plus newest PM2.5, PM10, ozone and reported AQI; each value with unit, time, age, staleness."+deprecatedNote("station_id", "sensor_id"),
		describeStationID, ts.aqi)
}

func aqiWindow(st contract.Station) time.Duration { return max(nowCastWindow, 3*interval(st)) }

func (ts *toolset) aqi(ctx context.Context, req *mcp.CallToolRequest, in StationInput) (AQIResult, string, error) {
	st, w, prov, err := ts.domainWindow(ctx, req, in.Target, aqiWindow)
	if err != nil {
		return AQIResult{}, "", err
	}
	out := AQIResult{
		domainHead: ts.head(st, w), Provenance: prov,
		PM25:        ts.valueOf(st, w, canon.PM25),
		PM10:        ts.valueOf(st, w, canon.PM10),
		Ozone:       ts.valueOf(st, w, canon.OzonePPB),
		ReportedAQI: ts.valueOf(st, w, canon.AQI),
		WindowHours: aqiWindow(st).Hours(),
	}
	out.Missing = missing(map[string]bool{canon.PM25: out.PM25 != nil, canon.PM10: out.PM10 != nil, canon.OzonePPB: out.Ozone != nil})
	switch {
	case out.PM25 != nil:
		_, t, _ := latestOf(w, canon.PM25)
		c, hours, nowcast := nowCast(hourly(w, canon.PM25), t.Truncate(time.Hour))
		out.Method, out.Pollutant, out.HoursUsed = AQIMethodNowCast, canon.PM25, hours
		if !nowcast {
			out.Method = AQIMethodHourly
		}
		out.Concentration = ts.value(st, c, canon.UgPerM3, t)
		idx, err := aqi.FromPM25(c)
		if err != nil {
			return AQIResult{}, "", userErrorf("station %q: PM2.5 of %s µg/m³ has no AQI: %v", st.ExternalID, fmtNum(c), err)
		}
		out.AQI = idx
	case out.ReportedAQI != nil:
		out.Method, out.Pollutant, out.AQI = AQIMethodReported, canon.AQI, int(math.Round(out.ReportedAQI.Value))
	default:
		return AQIResult{}, "", userErrorf("station %q (%s) reported neither PM2.5 nor an AQI in the %s h before its newest reading; "+
			"it reports %s", st.ExternalID, st.Name, fmtNum(out.WindowHours), strings.Join(st.DataTypes, ", "))
	}
	cat, err := aqi.CategoryOf(out.AQI)
	if err != nil {
		return AQIResult{}, "", userErrorf("station %q: AQI %d cannot be rated: %v", st.ExternalID, out.AQI, err)
	}
	out.Category, out.HealthMessage, out.Advice, out.Color = cat.Name, cat.HealthMessage, cat.Advice, cat.Color
	parts := aqiSummary(out)
	out.Summary = strings.Join(parts, " ")
	return out, renderDomain("Air quality", out.domainHead, parts, out.Missing, out.Provenance), nil
}

func aqiSummary(o AQIResult) []string {
	parts := []string{fmt.Sprintf("AQI %d (%s)", o.AQI, o.Category)}
	switch o.Method {
	case AQIMethodNowCast:
		parts[0] += fmt.Sprintf(" from the PM2.5 NowCast of %s µg/m³ over %d hours", fmtNum(o.Concentration.Value), o.HoursUsed)
	case AQIMethodHourly:
		parts[0] += fmt.Sprintf(" from the latest hourly PM2.5 average of %s µg/m³ (too few hours for a NowCast)", fmtNum(o.Concentration.Value))
	case AQIMethodReported:
		parts[0] += " as reported by " + o.Provenance.Provider
	}
	parts[0] += "."
	parts = append(parts, o.HealthMessage)
	if o.Advice != "" && o.Advice != "None." {
		parts = append(parts, o.Advice)
	}
	var vals []string
	if o.PM25 != nil {
		vals = append(vals, "PM2.5 "+fmtValue(o.PM25))
	}
	if o.PM10 != nil {
		vals = append(vals, "PM10 "+fmtValue(o.PM10))
	}
	if o.Ozone != nil {
		vals = append(vals, "ozone "+fmtValue(o.Ozone))
	}
	if o.ReportedAQI != nil && o.Method != AQIMethodReported {
		vals = append(vals, "provider-reported AQI "+fmtNum(o.ReportedAQI.Value))
	}
	if len(vals) > 0 {
		parts = append(parts, "Newest values: "+strings.Join(vals, "; ")+".")
	}
	return parts
}

// hourly returns the clock-hour averages of parameter p in a window, by hour start.
func hourly(w []sample, p string) map[time.Time]float64 {
	sum := map[time.Time]float64{}
	n := map[time.Time]int{}
	for _, s := range w {
		if m, ok := s.values[p]; ok {
			h := s.t.Truncate(time.Hour)
			sum[h] += m.Value
			n[h]++
		}
	}
	for h := range sum {
		sum[h] /= float64(n[h])
	}
	return sum
}

// nowCast is the EPA NowCast of PM2.5 (Technical Assistance Document for the Reporting of
// Daily Air Quality, EPA-454/B-18-007 and the AirNow NowCast fact sheet): over the 12
// clock hours ending with the hour `last`, with the weight factor w = min/max of the
// hourly averages floored at 0.5, NowCast = Σ w^i c_i / Σ w^i (i = 0 for the newest hour)
// over the hours that have data, truncated to 0.1 µg/m³. It needs two of the three most
// recent hours; without them it returns the newest hourly average and false.
func nowCast(hours map[time.Time]float64, last time.Time) (float64, int, bool) {
	var cs [12]float64
	var ok [12]bool
	lo, hi := math.Inf(1), math.Inf(-1)
	valid := 0
	for i := range 12 {
		c, has := hours[last.Add(-time.Duration(i)*time.Hour)]
		if !has {
			continue
		}
		cs[i], ok[i] = c, true
		lo, hi = math.Min(lo, c), math.Max(hi, c)
		valid++
	}
	recent := 0
	for i := range 3 {
		if ok[i] {
			recent++
		}
	}
	if recent < 2 {
		for i := range 12 {
			if ok[i] {
				return truncate1(cs[i]), 1, false
			}
		}
		return 0, 0, false
	}
	wf := 1.0
	if hi > 0 {
		wf = math.Max(lo/hi, 0.5)
	}
	var num, den float64
	for i := range 12 {
		if !ok[i] {
			continue
		}
		f := math.Pow(wf, float64(i))
		num += f * cs[i]
		den += f
	}
	return truncate1(num / den), valid, true
}

func truncate1(v float64) float64 { return math.Floor(v*10+1e-9) / 10 }
