package ndbc

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/sensorgate/sensorgate/services/adapters/internal/synth"
	"github.com/sensorgate/sensorgate/services/observation"
)

// Offshore anchors for synthetic buoys (scattered 60 km around) and coastal anchors for
// synthetic C-MAN stations (scattered 5 km around).
var (
	buoyAnchors = []synth.Place{
		synth.At("Gulf of Maine", 43.0, -68.5), synth.At("Georges Bank", 41.1, -66.6), synth.At("Mid-Atlantic Bight", 38.5, -72.0),
		synth.At("Off Cape Hatteras", 34.5, -74.5), synth.At("Blake Plateau", 30.5, -78.0), synth.At("Central Gulf of Mexico", 26.0, -89.0),
		synth.At("Western Gulf of Mexico", 27.0, -94.0), synth.At("Point Conception Offshore", 34.0, -121.5), synth.At("Off San Francisco", 37.5, -123.6),
		synth.At("Off Oregon", 44.5, -125.6), synth.At("Off Washington", 47.5, -125.9), synth.At("South of Oahu", 20.4, -158.0),
	}
	coastAnchors = []synth.Place{
		synth.At("Thomas Point", 38.9, -76.44), synth.At("Cape Lookout", 34.62, -76.52), synth.At("Molasses Reef", 25.01, -80.38),
		synth.At("Grand Isle", 29.27, -89.96), synth.At("Port Aransas", 27.84, -97.05), synth.At("Point Arguello", 34.58, -120.65),
	}
)

type simStation struct {
	i        int
	id, name string
	fixed    bool
	lat, lon float64
	cadence  time.Duration
	noATMP   bool // a sensor that is out for the whole run, as 41002's ATMP was
}

func simStations(w synth.World) []simStation {
	out := make([]simStation, w.Stations)
	for i := range out {
		s := simStation{i: i, id: fmt.Sprintf("SG%03d", i+1)}
		if w.Stations > 999 {
			s.id = fmt.Sprintf("SG%04d", i+1)
		}
		s.fixed = i%4 == 3
		if s.fixed {
			a := coastAnchors[(i/4)%len(coastAnchors)]
			s.lat, s.lon = w.Scatter(i, a, 5)
			s.name = a.Name + " " + s.id + " (synthetic C-MAN)"
			s.cadence = time.Hour
		} else {
			a := buoyAnchors[(i-i/4)%len(buoyAnchors)]
			s.lat, s.lon = w.Scatter(i, a, 60)
			s.name = a.Name + " " + s.id + " (synthetic buoy)"
			s.cadence = 10 * time.Minute
		}
		s.noATMP = !s.fixed && w.Unit(uint64(i), synth.Channel("atmp-broken")) < 0.15
		out[i] = s
	}
	return out
}

// simStationList writes an activestations.xml of the synthetic stations (ids SG001...;
// every fourth is a coastal C-MAN station, the rest buoys).
func simStationList(w synth.World) ([]observation.Payload, error) {
	type xs struct {
		XMLName xml.Name `xml:"station"`
		xmlStation
	}
	var buf bytes.Buffer
	buf.WriteString(xml.Header)
	fmt.Fprintf(&buf, "<stations created=\"synthetic\" count=\"%d\">\n", w.Stations)
	for _, s := range simStations(w) {
		typ := "buoy"
		if s.fixed {
			typ = "fixed"
		}
		e := xs{xmlStation: xmlStation{
			ID: s.id, Lat: strconv.FormatFloat(s.lat, 'f', 3, 64), Lon: strconv.FormatFloat(s.lon, 'f', 3, 64),
			Elev: "0", Name: s.name, Owner: "sensorgate simulator", Program: "Synthetic", Type: typ,
			Met: "y", Currents: "n", WaterQuality: "n", DART: "n",
		}}
		b, err := xml.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("ndbc: encode synthetic station: %w", err)
		}
		buf.WriteString("  ")
		buf.Write(b)
		buf.WriteByte('\n')
	}
	buf.WriteString("</stations>\n")
	return []observation.Payload{{Format: FormatActiveStations, Body: buf.Bytes()}}, nil
}

const (
	simHeader = "#YY  MM DD hh mm WDIR WSPD GST  WVHT   DPD   APD MWD   PRES  ATMP  WTMP  DEWP  VIS PTDY  TIDE\n" +
		"#yr  mo dy hr mn degT m/s  m/s     m   sec   sec degT   hPa  degC  degC  degC  nmi  hPa    ft\n"
)

// simulate writes one realtime2 file per synthetic station that reports in [from, to),
// newest row first as NDBC writes them, with MM for missing values, waves twice an hour,
// PTDY on the hour, and missing rows (gaps).
func simulate(w synth.World, from, to time.Time) ([]observation.Payload, error) {
	var out []observation.Payload
	for _, s := range simStations(w) {
		ticks := w.Reporting(s.i, synth.Ticks(from, to, s.cadence, 0))
		if len(ticks) == 0 {
			continue
		}
		buf := bytes.NewBuffer(make([]byte, 0, len(simHeader)+len(ticks)*100))
		buf.WriteString(simHeader)
		for _, t := range ticks {
			writeRow(buf, w, s, t)
		}
		out = append(out, observation.Payload{Format: FormatStdmet, StationID: s.id, Body: buf.Bytes()})
	}
	return out, nil
}

var (
	chWTMP = synth.Channel("wtmp")
	chATMP = synth.Channel("atmp")
	chWSPD = synth.Channel("wspd")
	chWDIR = synth.Channel("wdir")
	chPRES = synth.Channel("pres")
	chWVHT = synth.Channel("wvht")
	chPTDY = synth.Channel("ptdy")
)

func writeRow(buf *bytes.Buffer, w synth.World, s simStation, t time.Time) {
	i := s.i
	seasonal := synth.Seasonal(t)
	wtmp := 28 - 0.45*math.Max(0, s.lat-22) + 3*seasonal + 0.6*w.Smooth(i, chWTMP, t, 36*time.Hour) + 0.25*synth.Diurnal(t, s.lon, 15)
	atmp := wtmp - 1 + 4*seasonal*0.3 + 1.8*synth.Diurnal(t, s.lon, 15) + 1.2*w.Smooth(i, chATMP, t, 8*time.Hour)
	wspd := math.Max(0, 6.5+3.5*w.Smooth(i, chWSPD, t, 9*time.Hour)+1.2*w.Smooth(i, chWSPD+1, t, 2*time.Hour)+0.3*w.Normal(uint64(i), chWSPD, uint64(t.Unix())))
	if s.fixed {
		wspd *= 0.7
	}
	gst := wspd*1.25 + 0.5
	wdir := math.Mod(200+140*w.Smooth(i, chWDIR, t, 20*time.Hour)+15*w.Normal(uint64(i), chWDIR, uint64(t.Unix()))+720, 360)
	if wdir < 0.5 {
		wdir = 360
	}
	pres := 1015 + 9*w.Smooth(i, chPRES, t, 60*time.Hour) + 2.5*w.Smooth(i, chPRES+1, t, 10*time.Hour) + 0.8*math.Cos(4*math.Pi*float64(t.Hour())/24)
	wvht := math.Max(0.1, 0.4+0.2*wspd+0.3*w.Smooth(i, chWVHT, t, 12*time.Hour))
	miss := func(ch uint64) bool { return w.Missing(i, ch, t) }

	b := make([]byte, 0, 104)
	b = fmt.Appendf(b, "%4d %02d %02d %02d %02d", t.Year(), int(t.Month()), t.Day(), t.Hour(), t.Minute())
	b = appendCol(b, 5, wdir, 0, miss(chWDIR))
	b = appendCol(b, 5, wspd, 1, miss(chWSPD))
	b = appendCol(b, 5, gst, 1, miss(chWSPD))
	waves := !s.fixed && (t.Minute() == 20 || t.Minute() == 50)
	b = appendCol(b, 6, wvht, 1, !waves || miss(chWVHT))
	b = appendCol(b, 6, 5+3*w.Unit(uint64(i), chWVHT, uint64(t.Unix()/3600)), 0, !waves)
	b = appendCol(b, 6, 4+1.5*w.Unit(uint64(i), chWVHT+1, uint64(t.Unix()/3600)), 1, !waves)
	b = appendCol(b, 4, math.Mod(wdir+10, 360), 0, !waves)
	b = appendCol(b, 7, pres, 1, miss(chPRES))
	b = appendCol(b, 6, atmp, 1, s.noATMP || miss(chATMP))
	b = appendCol(b, 6, wtmp, 1, miss(chWTMP))
	b = appendCol(b, 6, atmp-2.5, 1, true)
	b = appendCol(b, 5, 0, 1, true)
	if t.Minute() == 0 && !miss(chPTDY) {
		b = append(b, ' ')
		b = fmt.Appendf(b, "%+4.1f", 1.5*w.Smooth(i, chPTDY, t, 3*time.Hour))
	} else {
		b = appendCol(b, 5, 0, 1, true)
	}
	b = appendCol(b, 6, 0, 1, true)
	b = append(b, '\n')
	buf.Write(b)
}

// appendCol right-aligns v (or MM) in a column of width characters including the space.
func appendCol(b []byte, width int, v float64, prec int, missing bool) []byte {
	var s []byte
	if missing {
		s = []byte("MM")
	} else {
		s = strconv.AppendFloat(nil, v, 'f', prec, 64)
	}
	for pad := width - len(s); pad > 0; pad-- {
		b = append(b, ' ')
	}
	return append(b, s...)
}
