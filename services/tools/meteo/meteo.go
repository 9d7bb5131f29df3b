// Package meteo holds the published formulas and scales the domain tools summarize readings
// with (NWS heat index and wind chill, Magnus dew point, Beaufort, the WMO Douglas sea
// scale, the Met Office pressure tendency wording), so each is written, cited and tested
// once rather than inline in a tool handler.
package meteo

import (
	"math"
)

// CToF converts degrees Celsius to Fahrenheit.
func CToF(c float64) float64 { return c*9/5 + 32 }

// FToC converts degrees Fahrenheit to Celsius.
func FToC(f float64) float64 { return (f - 32) * 5 / 9 }

// MSToMPH converts metres per second to statute miles per hour.
func MSToMPH(v float64) float64 { return v / 0.44704 }

// MSToKnots converts metres per second to knots.
func MSToKnots(v float64) float64 { return v * 3600 / 1852 }

// MSToKMH converts metres per second to kilometres per hour.
func MSToKMH(v float64) float64 { return v * 3.6 }

// MToFt converts metres to feet.
func MToFt(m float64) float64 { return m / 0.3048 }

// Round rounds v to the given number of decimal digits.
func Round(v float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	r := math.Round(v*p) / p
	if r == 0 {
		return 0 // not -0, which prints as "-0"
	}
	return r
}

// HeatIndexF is the NWS heat index (the Rothfusz regression with the NWS low- and
// high-humidity adjustments, https://www.wpc.ncep.noaa.gov/html/heatindex_equation.shtml)
// for air temperature tF in °F and relative humidity rh in percent. As the NWS does, the
// simple Steadman formula is used when its average with the temperature is below 80 °F.
func HeatIndexF(tF, rh float64) float64 {
	simple := 0.5 * (tF + 61.0 + (tF-68.0)*1.2 + rh*0.094)
	if (simple+tF)/2 < 80 {
		return simple
	}
	t, r := tF, rh
	hi := -42.379 + 2.04901523*t + 10.14333127*r - 0.22475541*t*r -
		0.00683783*t*t - 0.05481717*r*r + 0.00122874*t*t*r +
		0.00085282*t*r*r - 0.00000199*t*t*r*r
	switch {
	case r < 13 && t >= 80 && t <= 112:
		hi -= ((13 - r) / 4) * math.Sqrt((17-math.Abs(t-95))/17)
	case r > 85 && t >= 80 && t <= 87:
		hi += ((r - 85) / 10) * ((87 - t) / 5)
	}
	return hi
}

// WindChillF is the NWS wind chill (2001 JAG/TI formula,
// https://www.weather.gov/media/epz/wxcalc/windChill.pdf) for air temperature tF in °F and
// wind speed mph in miles per hour at 10 m.
func WindChillF(tF, mph float64) float64 {
	v := math.Pow(mph, 0.16)
	return 35.74 + 0.6215*tF - 35.75*v + 0.4275*tF*v
}

// FeelsLike methods.
const (
	MethodHeatIndex      = "heat_index"
	MethodWindChill      = "wind_chill"
	MethodAirTemperature = "air_temperature"
)

// FeelsLikeC is the apparent temperature in °C the way the NWS reports it: wind chill when
// the air is at or below 50 °F and the wind above 3 mph, heat index when the air is at or
// above 80 °F and the humidity is known, the air temperature otherwise. windMS or rh may be
// NaN when the station did not report them; the rule that needs them then does not apply.
func FeelsLikeC(tC, windMS, rh float64) (float64, string) {
	tF := CToF(tC)
	mph := MSToMPH(windMS)
	switch {
	case tF <= 50 && !math.IsNaN(windMS) && mph > 3:
		return FToC(WindChillF(tF, mph)), MethodWindChill
	case tF >= 80 && !math.IsNaN(rh):
		return FToC(HeatIndexF(tF, rh)), MethodHeatIndex
	default:
		return tC, MethodAirTemperature
	}
}

// DewPointC is the dew point in °C from the Magnus formula with the Alduchov-Eskridge
// coefficients (a = 17.625, b = 243.04 °C), good to 0.1 °C for -40..50 °C.
func DewPointC(tC, rh float64) float64 {
	const a, b = 17.625, 243.04
	g := math.Log(rh/100) + a*tC/(b+tC)
	return b * g / (a - g)
}

var cardinals = [16]string{"N", "NNE", "NE", "ENE", "E", "ESE", "SE", "SSE", "S", "SSW", "SW", "WSW", "W", "WNW", "NW", "NNW"}

// Cardinal names the 16-point compass direction a wind comes from.
func Cardinal(deg float64) string {
	d := math.Mod(deg, 360)
	if d < 0 {
		d += 360
	}
	return cardinals[int((d+11.25)/22.5)%16]
}

// Scale is a step of a descriptive scale: its number and name.
type Scale struct {
	Number      int
	Description string
}

// beaufortLower are the lower bounds in m/s of Beaufort forces 1..12 (WMO).
var beaufortLower = [12]float64{0.5, 1.6, 3.4, 5.5, 8.0, 10.8, 13.9, 17.2, 20.8, 24.5, 28.5, 32.7}

var beaufortNames = [13]string{"calm", "light air", "light breeze", "gentle breeze", "moderate breeze",
	"fresh breeze", "strong breeze", "near gale", "gale", "strong gale", "storm", "violent storm", "hurricane force"}

// Beaufort returns the Beaufort force of a 10-minute mean wind speed in m/s.
func Beaufort(ms float64) Scale {
	n := 0
	for i, lo := range beaufortLower {
		if ms >= lo {
			n = i + 1
		}
	}
	return Scale{n, beaufortNames[n]}
}

// douglasUpper are the upper bounds in metres of sea states 1..8 (WMO code table 3700);
// 0 is exactly calm and anything above the last bound is 9.
var douglasUpper = [8]float64{0.1, 0.5, 1.25, 2.5, 4, 6, 9, 14}

var douglasNames = [10]string{"calm (glassy)", "calm (rippled)", "smooth (wavelets)", "slight", "moderate",
	"rough", "very rough", "high", "very high", "phenomenal"}

// DouglasSeaState returns the WMO sea state (Douglas sea scale) of a significant wave height
// in metres.
func DouglasSeaState(hsM float64) Scale {
	if hsM <= 0 {
		return Scale{0, douglasNames[0]}
	}
	for i, hi := range douglasUpper {
		if hsM <= hi {
			return Scale{i + 1, douglasNames[i+1]}
		}
	}
	return Scale{9, douglasNames[9]}
}

// PressureTendency words a pressure change over three hours (hPa) the way the Met Office
// shipping forecast does: steady below 0.1 hPa, slowly up to 1.5, plain up to 3.5,
// quickly up to 6.0, very rapidly beyond. The result is e.g. "steady", "rising_slowly",
// "falling", "falling_quickly", "rising_very_rapidly".
func PressureTendency(delta3h float64) string {
	a := math.Abs(Round(delta3h, 1))
	if a < 0.1 {
		return "steady"
	}
	dir := "rising"
	if delta3h < 0 {
		dir = "falling"
	}
	switch {
	case a <= 1.5:
		return dir + "_slowly"
	case a <= 3.5:
		return dir
	case a <= 6.0:
		return dir + "_quickly"
	default:
		return dir + "_very_rapidly"
	}
}
