package metar

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
)

// Report is what the decoder reads out of one METAR report's text. Nil fields were not
// reported (or reported as missing: "/////", "M" for a missing temperature).
type Report struct {
	Station     string
	Day, Hour   int
	Minute      int
	TempC       *float64 // T group (tenths) when present, else the whole-degree group
	DewC        *float64
	TempField   string // "T" group or "TT/DD" body group: the field the values came from
	WindDirDeg  *float64
	WindSpeed   *float64 // in WindUnit
	WindGust    *float64
	WindUnit    string // "kt" or "m/s"
	Variable    bool   // VRB: a speed with no direction
	VisSM       *float64
	VisBounded  bool     // M1/4SM (less than) or P6SM (more than): not an exact value
	AltimInHg   *float64 // A group, inches of mercury
	AltimHPa    *float64 // Q group, hectopascals
	TendencyHPa *float64 // 5appp: 3-hour pressure change
}

var (
	reTime   = regexp.MustCompile(`^(\d{2})(\d{2})(\d{2})Z$`)
	reWind   = regexp.MustCompile(`^(\d{3}|VRB)(\d{2,3})(?:G(\d{2,3}))?(KT|MPS)$`)
	reTemp   = regexp.MustCompile(`^(M?\d{2}|//)/(M?\d{2}|//)?$`)
	reTGroup = regexp.MustCompile(`^T([01])(\d{3})(?:([01])(\d{3}))?$`)
	reAltim  = regexp.MustCompile(`^A(\d{4})$`)
	reQNH    = regexp.MustCompile(`^Q(\d{4})$`)
	reVisSM  = regexp.MustCompile(`^([MP])?(?:(\d+)|(\d+)/(\d+))SM$`)
	reTend   = regexp.MustCompile(`^5([0-8])(\d{3})$`)
	reID     = regexp.MustCompile(`^[A-Z][A-Z0-9]{3}$`)
)

// Decode reads one report's text. Only what a canonical parameter needs is decoded;
// everything else (sky, weather, runway groups) stays in the raw fragment.
func Decode(text string) (Report, error) {
	f := strings.Fields(text)
	i := 0
	if i < len(f) && (f[i] == "METAR" || f[i] == "SPECI") {
		i++
	}
	if i >= len(f) || !reID.MatchString(f[i]) {
		return Report{}, fmt.Errorf("no station identifier at the start of %q", batch.Truncate(text, 60))
	}
	r := Report{Station: f[i]}
	i++
	if i >= len(f) {
		return Report{}, fmt.Errorf("%s: no time group", r.Station)
	}
	m := reTime.FindStringSubmatch(f[i])
	if m == nil {
		return Report{}, fmt.Errorf("%s: %q is not a DDHHMMZ time group", r.Station, batch.Truncate(f[i], 20))
	}
	r.Day, _ = strconv.Atoi(m[1])
	r.Hour, _ = strconv.Atoi(m[2])
	r.Minute, _ = strconv.Atoi(m[3])
	i++
	remarks := false
	for ; i < len(f); i++ {
		g := f[i]
		if g == "RMK" {
			remarks = true
			continue
		}
		if remarks {
			if m := reTGroup.FindStringSubmatch(g); m != nil {
				r.TempC = tenths(m[1], m[2])
				r.DewC = nil
				if m[3] != "" {
					r.DewC = tenths(m[3], m[4])
				}
				r.TempField = "T group"
			} else if m := reTend.FindStringSubmatch(g); m != nil {
				v, _ := strconv.Atoi(m[2])
				x := float64(v) / 10
				switch m[1] {
				case "5", "6", "7", "8": // decreasing (or steady then decreasing)
					x = -x
				case "4": // steady
					x = 0
				}
				r.TendencyHPa = &x
			}
			continue
		}
		switch {
		case reWind.MatchString(g):
			m := reWind.FindStringSubmatch(g)
			sp, _ := strconv.ParseFloat(m[2], 64)
			r.WindSpeed = &sp
			r.WindUnit = "kt"
			if m[4] == "MPS" {
				r.WindUnit = "m/s"
			}
			if m[3] != "" {
				gu, _ := strconv.ParseFloat(m[3], 64)
				r.WindGust = &gu
			}
			switch {
			case m[1] == "VRB":
				r.Variable = true
			case sp == 0 && m[1] == "000":
				// Calm: no direction.
			default:
				d, _ := strconv.ParseFloat(m[1], 64)
				r.WindDirDeg = &d
			}
		case reVisSM.MatchString(g):
			m := reVisSM.FindStringSubmatch(g)
			var v float64
			if m[2] != "" {
				v, _ = strconv.ParseFloat(m[2], 64)
			} else {
				n, _ := strconv.ParseFloat(m[3], 64)
				d, _ := strconv.ParseFloat(m[4], 64)
				if d == 0 {
					continue
				}
				v = n / d
				// "1 1/2SM": a whole number in the group before.
				if i > 0 {
					if w, err := strconv.Atoi(f[i-1]); err == nil && w > 0 && w < 10 {
						v += float64(w)
					}
				}
			}
			r.VisSM = &v
			r.VisBounded = m[1] != ""
		case reTemp.MatchString(g) && r.TempC == nil:
			m := reTemp.FindStringSubmatch(g)
			r.TempC = whole(m[1])
			r.DewC = whole(m[2])
			r.TempField = "TT/DD"
		case reAltim.MatchString(g):
			v, _ := strconv.ParseFloat(g[1:], 64)
			v /= 100
			r.AltimInHg = &v
		case reQNH.MatchString(g):
			v, _ := strconv.ParseFloat(g[1:], 64)
			r.AltimHPa = &v
		}
	}
	return r, nil
}

func tenths(sign, digits string) *float64 {
	v, _ := strconv.Atoi(digits)
	x := float64(v) / 10
	if sign == "1" {
		x = -x
	}
	return &x
}

func whole(s string) *float64 {
	if s == "" || s == "//" {
		return nil
	}
	neg := strings.HasPrefix(s, "M")
	v, _ := strconv.Atoi(strings.TrimPrefix(s, "M"))
	x := float64(v)
	if neg {
		x = -x
	}
	return &x
}

// adder is what a report's values are added to (batch.Measurements).
type adder interface {
	Add(field, parameter string, value float64, unit string)
}

// rejecter records values that are reported but not exact.
type rejecter func(field, reason, detail string)

// ReasonBoundedValue: a METAR "less than" or "more than" value (M1/4SM, P6SM) is not a
// measurement of the quantity and is not stored as one.
const ReasonBoundedValue = "bounded_value"

// add converts a decoded report into canonical measurements: °C, knots (or m/s) for wind
// and gust, statute miles for visibility, inHg (or hPa) altimeter setting as air pressure,
// and the 3-hour tendency. The altimeter setting is the pressure reduced to sea level by
// the standard atmosphere, what METARs publish; the remarks' SLP is not used.
func (r Report) add(ms adder, reject rejecter) {
	tf := "temperature (" + r.TempField + ")"
	if r.TempC != nil {
		ms.Add(tf, canon.AirTemperatureC, *r.TempC, "degC")
	}
	if r.DewC != nil {
		ms.Add("dew point ("+r.TempField+")", canon.DewPointC, *r.DewC, "degC")
	}
	if r.WindSpeed != nil {
		ms.Add("wind speed", canon.WindSpeedMS, *r.WindSpeed, r.WindUnit)
		if r.WindDirDeg != nil {
			ms.Add("wind direction", canon.WindDirectionDeg, *r.WindDirDeg, "deg")
		}
		if r.WindGust != nil {
			ms.Add("wind gust", canon.WindGustMS, *r.WindGust, r.WindUnit)
		}
	}
	if r.VisSM != nil {
		if r.VisBounded {
			reject("visibility", ReasonBoundedValue, fmt.Sprintf("visibility %g SM is a bound (M/P), not a measurement", *r.VisSM))
		} else {
			ms.Add("visibility", canon.VisibilityM, *r.VisSM, "mi")
		}
	}
	switch {
	case r.AltimInHg != nil:
		ms.Add("altimeter (A)", canon.AirPressureHPa, *r.AltimInHg, "inHg")
	case r.AltimHPa != nil:
		ms.Add("altimeter (Q)", canon.AirPressureHPa, *r.AltimHPa, "hPa")
	}
	if r.TendencyHPa != nil {
		ms.Add("pressure tendency (5appp)", canon.PressureTendencyHPa, *r.TendencyHPa, "hPa")
	}
}

// timeIn dates the report's day, hour and minute in the month of ref or, when that would
// put it more than a day after ref, in the month before (a report of the 31st read on the
// 1st). It fails for a day the month does not have.
func (r Report) timeIn(ref time.Time) (time.Time, error) {
	ref = ref.UTC()
	if r.Hour > 23 || r.Minute > 59 || r.Day < 1 || r.Day > 31 {
		return time.Time{}, fmt.Errorf("%s: time %02d%02d%02dZ is not a day, hour and minute", r.Station, r.Day, r.Hour, r.Minute)
	}
	y, mo := ref.Year(), ref.Month()
	t := time.Date(y, mo, r.Day, r.Hour, r.Minute, 0, 0, time.UTC)
	if t.After(ref.Add(24 * time.Hour)) {
		y, mo = ref.AddDate(0, -1, -ref.Day()+1).Year(), ref.AddDate(0, -1, -ref.Day()+1).Month()
		t = time.Date(y, mo, r.Day, r.Hour, r.Minute, 0, 0, time.UTC)
	}
	if t.Day() != r.Day {
		return time.Time{}, fmt.Errorf("%s: day %d is not in %04d-%02d", r.Station, r.Day, y, mo)
	}
	return t, nil
}
