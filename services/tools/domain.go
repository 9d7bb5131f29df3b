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
	"github.com/sensorgate/sensorgate/services/tools/meteo"
)

// StationInput is the input of the domain tools: one station, defaulting to the
// gateway's sensor context.
type StationInput struct {
	Target
}

// Scale is a step of a descriptive scale (Beaufort, Douglas sea state).
type Scale struct {
	Number      int    `json:"number"`
	Description string `json:"description"`
}

// Wind is wind speed and direction with the usual derived forms.
type Wind struct {
	Speed      Quantity  `json:"speed" jsonschema:"10-minute mean wind speed, m/s"`
	SpeedKnots float64   `json:"speed_knots"`
	SpeedKMH   float64   `json:"speed_kmh"`
	Direction  *Quantity `json:"direction,omitempty" jsonschema:"direction the wind blows from, degrees true"`
	From       string    `json:"from,omitempty" jsonschema:"16-point compass direction the wind blows from"`
	Beaufort   Scale     `json:"beaufort"`
}

// Pressure is the newest air pressure with its three-hour tendency.
type Pressure struct {
	Quantity
	Trend *PressureTrend `json:"trend,omitempty" jsonschema:"absent when no reading lies two to four hours before the newest"`
}

// summaryWindow is how far before a station's newest reading the domain tools look for
// the newest value of each parameter: long enough for hourly parameters and the
// three-hour pressure tendency, at least three reporting intervals.
func summaryWindow(st contract.Station) time.Duration {
	return max(6*time.Hour, 3*interval(st))
}

// domainWindow loads the newest reading of a station and the readings before it within
// lookback.
func (ts *toolset) domainWindow(ctx context.Context, req *mcp.CallToolRequest, arg Target, lookback func(contract.Station) time.Duration) (contract.Station, []sample, Provenance, error) {
	st, err := ts.station(ctx, req, arg)
	if err != nil {
		return st, nil, Provenance{}, err
	}
	r, err := ts.latest(ctx, st)
	if err != nil {
		return st, nil, Provenance{}, err
	}
	w, err := ts.window(ctx, st, r.Time.Add(-lookback(st)), r.Time)
	if err != nil {
		return st, nil, Provenance{}, err
	}
	return st, w, ts.provenance(st, &r), nil
}

// valueOf returns the newest value of p in the window as a Quantity, or nil.
func (ts *toolset) valueOf(st contract.Station, w []sample, p string) *Quantity {
	m, t, ok := latestOf(w, p)
	if !ok {
		return nil
	}
	return ts.value(st, m.Value, m.Unit, t)
}

func (ts *toolset) wind(st contract.Station, w []sample) *Wind {
	sp := ts.valueOf(st, w, canon.WindSpeedMS)
	if sp == nil {
		return nil
	}
	b := meteo.Beaufort(sp.Value)
	out := &Wind{Speed: *sp, SpeedKnots: meteo.Round(meteo.MSToKnots(sp.Value), 1), SpeedKMH: meteo.Round(meteo.MSToKMH(sp.Value), 1), Beaufort: Scale{b.Number, b.Description}}
	if d := ts.valueOf(st, w, canon.WindDirectionDeg); d != nil {
		out.Direction, out.From = d, meteo.Cardinal(d.Value)
	}
	return out
}

func (ts *toolset) pressure(st contract.Station, w []sample) *Pressure {
	v := ts.valueOf(st, w, canon.AirPressureHPa)
	if v == nil {
		return nil
	}
	return &Pressure{Quantity: *v, Trend: pressureTrend(w, meteo.PressureTendency)}
}

// windPressure is the wind and the pressure with its tendency, which sea_state and
// current_conditions both report: found, counted as missing and written alike.
type windPressure struct {
	Wind     *Wind     `json:"wind,omitempty"`
	Pressure *Pressure `json:"pressure,omitempty"`
}

func (ts *toolset) windPressure(st contract.Station, w []sample) windPressure {
	return windPressure{Wind: ts.wind(st, w), Pressure: ts.pressure(st, w)}
}

// reported adds to params, for missing, whether wind speed, wind direction and pressure
// were found.
func (wp windPressure) reported(params map[string]bool) map[string]bool {
	params[canon.WindSpeedMS] = wp.Wind != nil
	params[canon.WindDirectionDeg] = wp.Wind != nil && wp.Wind.Direction != nil
	params[canon.AirPressureHPa] = wp.Pressure != nil
	return params
}

// parts are the summary's phrases for the wind and the pressure found.
func (wp windPressure) parts() []string {
	var parts []string
	if wp.Wind != nil {
		parts = append(parts, fmtWind(wp.Wind))
	}
	if wp.Pressure != nil {
		parts = append(parts, fmtPressure(wp.Pressure))
	}
	return parts
}

// domainHead is how the result of every domain tool begins: the station, a summary of
// what it reports, and the freshness of its newest reading.
type domainHead struct {
	Station StationRef `json:"station"`
	Summary string     `json:"summary"`
	Latest  Freshness  `json:"latest" jsonschema:"freshness of the station's newest reading"`
}

// head starts a domain result for the station's window w (newest first); the summary is
// written last, from the values found.
func (ts *toolset) head(st contract.Station, w []sample) domainHead {
	latest := ts.now()
	if len(w) > 0 {
		latest = w[0].t
	}
	return domainHead{Station: ts.ref(st), Latest: ts.freshness(st, latest)}
}

func missing(params map[string]bool) []string {
	out := []string{}
	for _, p := range canon.Parameters() {
		if present, asked := params[p.ID]; asked && !present {
			out = append(out, p.ID)
		}
	}
	return out
}

func fmtWind(w *Wind) string {
	s := fmt.Sprintf("wind %s m/s (%s kn, Beaufort %d, %s)", fmtNum(w.Speed.Value), fmtNum(w.SpeedKnots), w.Beaufort.Number, w.Beaufort.Description)
	if w.From != "" {
		s = fmt.Sprintf("wind from %s (%s°) %s", w.From, fmtNum(w.Direction.Value), strings.TrimPrefix(s, "wind "))
	}
	return s
}

func fmtPressure(p *Pressure) string {
	s := fmt.Sprintf("pressure %s hPa", fmtNum(p.Quantity.Value))
	if p.Trend != nil {
		s += fmt.Sprintf(", %s (%+.1f hPa in 3 h)", strings.ReplaceAll(p.Trend.Tendency, "_", " "), p.Trend.Change3hHPa)
	}
	return s
}

// ---- ocean: sea_state ----

// SeaState is the output of ocean.sea_state.
type SeaState struct {
	domainHead
	WaveHeight       *Quantity `json:"wave_height,omitempty" jsonschema:"significant wave height, m"`
	WaveHeightFt     *float64  `json:"wave_height_ft,omitempty"`
	SeaState         *Scale    `json:"sea_state,omitempty" jsonschema:"WMO sea state code 0-9 (Douglas sea scale) from the significant wave height"`
	WaterTemperature *Quantity `json:"water_temperature,omitempty" jsonschema:"sea surface temperature, celsius"`
	AirTemperature   *Quantity `json:"air_temperature,omitempty" jsonschema:"celsius"`
	windPressure
	Missing     []string   `json:"missing" jsonschema:"sea-state parameters the station did not report in the window"`
	WindowHours float64    `json:"window_hours" jsonschema:"how far before the newest reading values were looked for"`
	Provenance  Provenance `json:"provenance"`
}

func addSeaState(srv *mcp.Server, ts *toolset) error {
	return add(srv, ts, ToolSeaState, "Sea state",
		"Sea state of a buoy or coastal station: wave height with WMO sea state, water and air temperature, "+
			"wind with Beaufort force, pressure with 3-hour tendency; each value with unit, time, age, staleness."+deprecatedNote("station_id", "sensor_id"),
		describeStationID, ts.seaState)
}

func (ts *toolset) seaState(ctx context.Context, req *mcp.CallToolRequest, in StationInput) (SeaState, string, error) {
	st, w, prov, err := ts.domainWindow(ctx, req, in.Target, summaryWindow)
	if err != nil {
		return SeaState{}, "", err
	}
	out := SeaState{
		domainHead: ts.head(st, w), Provenance: prov,
		WaveHeight:       ts.valueOf(st, w, canon.WaveHeightM),
		WaterTemperature: ts.valueOf(st, w, canon.WaterTemperatureC),
		AirTemperature:   ts.valueOf(st, w, canon.AirTemperatureC),
		windPressure:     ts.windPressure(st, w),
		WindowHours:      summaryWindow(st).Hours(),
	}
	if out.WaveHeight != nil {
		d := meteo.DouglasSeaState(out.WaveHeight.Value)
		out.SeaState = &Scale{d.Number, d.Description}
		out.WaveHeightFt = ptr(meteo.Round(meteo.MToFt(out.WaveHeight.Value), 1))
	}
	out.Missing = missing(out.reported(map[string]bool{
		canon.WaveHeightM: out.WaveHeight != nil, canon.WaterTemperatureC: out.WaterTemperature != nil,
		canon.AirTemperatureC: out.AirTemperature != nil,
	}))
	var parts []string
	if out.WaveHeight != nil {
		parts = append(parts, fmt.Sprintf("%s sea, waves %s (%s ft)", capitalize(out.SeaState.Description), fmtValue(out.WaveHeight), fmtNum(*out.WaveHeightFt)))
	}
	if out.WaterTemperature != nil {
		parts = append(parts, fmt.Sprintf("water %s (%s °F)", fmtValue(out.WaterTemperature), fmtNum(meteo.Round(meteo.CToF(out.WaterTemperature.Value), 1))))
	}
	if out.AirTemperature != nil {
		parts = append(parts, "air "+fmtValue(out.AirTemperature))
	}
	parts = append(parts, out.windPressure.parts()...)
	if len(parts) == 0 {
		parts = append(parts, "no sea-state parameters reported in the last "+fmtNum(out.WindowHours)+" h before the newest reading")
	}
	out.Summary = strings.Join(parts, "; ")
	return out, renderDomain("Sea state", out.domainHead, parts, out.Missing, out.Provenance), nil
}

// ---- weather: current_conditions ----

// Temperature is an air temperature in celsius with its Fahrenheit form.
type Temperature struct {
	Quantity
	Fahrenheit float64 `json:"fahrenheit"`
}

// FeelsLike is the apparent temperature by the NWS rules.
type FeelsLike struct {
	Quantity
	Fahrenheit float64 `json:"fahrenheit"`
	Method     string  `json:"method" jsonschema:"wind_chill (air <= 50 °F and wind > 3 mph), heat_index (air >= 80 °F), or air_temperature"`
}

// Conditions is the output of weather.current_conditions.
type Conditions struct {
	domainHead
	Temperature *Temperature `json:"temperature,omitempty"`
	FeelsLike   *FeelsLike   `json:"feels_like,omitempty" jsonschema:"NWS wind chill or heat index; absent without a temperature"`
	DewPoint    *Quantity    `json:"dew_point,omitempty" jsonschema:"Magnus formula from temperature and humidity, celsius"`
	Humidity    *Quantity    `json:"humidity,omitempty" jsonschema:"relative humidity, percent"`
	windPressure
	Missing     []string   `json:"missing" jsonschema:"parameters the station did not report in the window"`
	WindowHours float64    `json:"window_hours"`
	Provenance  Provenance `json:"provenance"`
}

func addCurrentConditions(srv *mcp.Server, ts *toolset) error {
	return add(srv, ts, ToolCurrentConditions, "Current conditions",
		"Current weather at a station: temperature, NWS feels-like (heat index or wind chill), dew point, humidity, "+
			"wind with Beaufort force, pressure with 3-hour tendency; each value with unit, time, age, staleness."+deprecatedNote("station_id", "sensor_id"),
		describeStationID, ts.currentConditions)
}

func (ts *toolset) currentConditions(ctx context.Context, req *mcp.CallToolRequest, in StationInput) (Conditions, string, error) {
	st, w, prov, err := ts.domainWindow(ctx, req, in.Target, summaryWindow)
	if err != nil {
		return Conditions{}, "", err
	}
	out := Conditions{
		domainHead: ts.head(st, w), Provenance: prov,
		Humidity:     ts.valueOf(st, w, canon.RelativeHumidityPercent),
		windPressure: ts.windPressure(st, w),
		WindowHours:  summaryWindow(st).Hours(),
	}
	if tm, tt, ok := latestOf(w, canon.AirTemperatureC); ok {
		v := ts.value(st, tm.Value, tm.Unit, tt)
		out.Temperature = &Temperature{Quantity: *v, Fahrenheit: meteo.Round(meteo.CToF(tm.Value), 1)}
		// Wind and humidity count only when observed close to the temperature; an old
		// value would make the feels-like a mix of two different moments.
		near := func(p string) float64 {
			m, t, ok := latestOf(w, p)
			if !ok || absDur(t.Sub(tt)) > 2*interval(st) {
				return math.NaN()
			}
			return m.Value
		}
		wind, rh := near(canon.WindSpeedMS), near(canon.RelativeHumidityPercent)
		fl, method := meteo.FeelsLikeC(tm.Value, wind, rh)
		out.FeelsLike = &FeelsLike{Quantity: *ts.value(st, meteo.Round(fl, 1), canon.Celsius, tt), Fahrenheit: meteo.Round(meteo.CToF(fl), 1), Method: method}
		if !math.IsNaN(rh) && rh > 0 {
			out.DewPoint = ts.value(st, meteo.Round(meteo.DewPointC(tm.Value, rh), 1), canon.Celsius, tt)
		}
	}
	out.Missing = missing(out.reported(map[string]bool{
		canon.AirTemperatureC: out.Temperature != nil, canon.RelativeHumidityPercent: out.Humidity != nil,
	}))
	var parts []string
	if t := out.Temperature; t != nil {
		parts = append(parts, fmt.Sprintf("temperature %s (%s °F)", fmtValue(&t.Quantity), fmtNum(t.Fahrenheit)))
		f := out.FeelsLike
		how := map[string]string{meteo.MethodHeatIndex: "by the NWS heat index", meteo.MethodWindChill: "by the NWS wind chill", meteo.MethodAirTemperature: "(no wind chill or heat index applies)"}[f.Method]
		parts = append(parts, fmt.Sprintf("feels like %s °C (%s °F) %s", fmtNum(f.Quantity.Value), fmtNum(f.Fahrenheit), how))
	}
	if out.DewPoint != nil {
		parts = append(parts, "dew point "+fmtValue(out.DewPoint))
	}
	if out.Humidity != nil {
		parts = append(parts, "humidity "+fmtValue(out.Humidity))
	}
	parts = append(parts, out.windPressure.parts()...)
	if len(parts) == 0 {
		parts = append(parts, "no weather parameters reported in the last "+fmtNum(out.WindowHours)+" h before the newest reading")
	}
	out.Summary = strings.Join(parts, "; ")
	return out, renderDomain("Current conditions", out.domainHead, parts, out.Missing, out.Provenance), nil
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func renderDomain(title string, h domainHead, parts []string, miss []string, p Provenance) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s\n", title, stationTitle(h.Station))
	fmt.Fprintf(&b, "newest reading %s\n", fmtFresh(h.Latest))
	for _, part := range parts {
		fmt.Fprintf(&b, "  %s\n", part)
	}
	if len(miss) > 0 {
		fmt.Fprintf(&b, "not reported: %s\n", strings.Join(miss, ", "))
	}
	b.WriteString(fmtProvenance(p))
	return b.String()
}
