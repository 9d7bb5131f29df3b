package ndbc

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

// ErrNotStdmet is returned for a payload that has no recognizable stdmet header.
var ErrNotStdmet = errors.New("ndbc: not a standard meteorological text file")

// column maps one stdmet column to a canonical parameter. The sentinel is the fill value
// of the historical files ("99.00", "999", "999.0", "9999.0"); realtime2 files write MM
// instead, but a sentinel there is just as missing, so both are honoured everywhere.
type column struct {
	param       string
	defaultUnit string
	sentinel    float64
}

// columns are the stdmet columns and their canonical parameters; every column of the
// standard meteorological format has one. The sentinel is the column's fill value in the
// historical files (NDBC's "Missing data" table: 99.00 for WVHT/DPD/APD/TIDE, 999 for
// WDIR/MWD, 99.0 for WSPD/GST/VIS, 9999.0 for PRES, 999.0 for ATMP/WTMP/DEWP). PRES 999.0 is
// not a sentinel: a real low (TPLM2 2020-02-02 21:00 reported 999.0 hPa).
var columns = map[string]column{
	"WDIR": {canon.WindDirectionDeg, "degT", 999},
	"WSPD": {canon.WindSpeedMS, "m/s", 99},
	"GST":  {canon.WindGustMS, "m/s", 99},
	"WVHT": {canon.WaveHeightM, "m", 99},
	"DPD":  {canon.WavePeriodDominantS, "sec", 99},
	"APD":  {canon.WavePeriodAverageS, "sec", 99},
	"MWD":  {canon.WaveDirectionDeg, "degT", 999},
	"PRES": {canon.AirPressureHPa, "hPa", 9999},
	"ATMP": {canon.AirTemperatureC, "degC", 999},
	"WTMP": {canon.WaterTemperatureC, "degC", 999},
	"DEWP": {canon.DewPointC, "degC", 999},
	"VIS":  {canon.VisibilityM, "nmi", 99},
	"PTDY": {canon.PressureTendencyHPa, "hPa", 99},
	"TIDE": {canon.WaterLevelM, "ft", 99},
}

// aliases are the column names of pre-2007 historical files.
var aliases = map[string]string{"WD": "WDIR", "BAR": "PRES", "#YY": "YY", "YYYY": "YY", "#YYYY": "YY", "#STN": "STN"}

type header struct {
	names, units []string
	index        map[string]int
	text         string // the header line(s) verbatim, for raw fragments
	rawFormat    string
}

func (h header) col(name string) int {
	if i, ok := h.index[name]; ok {
		return i
	}
	return -1
}

func splitLines(data []byte) []string {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	return strings.Split(s, "\n")
}

func isHeaderLine(line string) bool {
	t := strings.TrimSpace(line)
	if strings.HasPrefix(t, "#") {
		return true
	}
	f := strings.Fields(t)
	return len(f) > 0 && f[0] != "" && unicode.IsLetter(rune(f[0][0]))
}

// parseHeader reads the column line and, when present, the units line.
func parseHeader(lines []string) (header, int, error) {
	i := 0
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	if i >= len(lines) || !isHeaderLine(lines[i]) {
		return header{}, 0, fmt.Errorf("%w: first line is not a column header", ErrNotStdmet)
	}
	h := header{index: map[string]int{}}
	text := []string{lines[i]}
	for j, name := range strings.Fields(strings.TrimSpace(lines[i])) {
		name = strings.ToUpper(name)
		if a, ok := aliases[name]; ok {
			name = a
		}
		name = strings.TrimPrefix(name, "#")
		h.names = append(h.names, name)
		if _, dup := h.index[name]; !dup {
			h.index[name] = j
		}
	}
	i++
	if i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "#") {
		text = append(text, lines[i])
		h.units = strings.Fields(strings.TrimPrefix(strings.TrimSpace(lines[i]), "#"))
		i++
	}
	h.text = strings.Join(text, "\n")
	for _, need := range []string{"YY", "MM", "DD", "HH"} {
		if h.col(need) < 0 {
			return header{}, 0, fmt.Errorf("%w: header has no %s column: %q", ErrNotStdmet, need, batch.Truncate(lines[0], 120))
		}
	}
	switch {
	case h.col("STN") >= 0:
		h.rawFormat = RawLatestObs
	case h.col("PTDY") >= 0:
		h.rawFormat = RawRealtime2
	default:
		h.rawFormat = RawHistorical
	}
	return h, i, nil
}

// The time columns are upper-cased on read, so "hh" and "mm" become "HH" and "MM" (month
// is "MM" too in the header: the first MM is the month, a second MM is the minute).
func (h *header) timeCols() (y, mo, d, hr, mi int) {
	y, d, hr = h.col("YY"), h.col("DD"), h.col("HH")
	mo, mi = -1, -1
	for j, n := range h.names {
		if n == "MM" {
			if mo < 0 {
				mo = j
			} else if mi < 0 {
				mi = j
			}
		}
	}
	return
}

// ParseStdmet reads a standard meteorological text file: realtime2 (header + units line,
// MM for missing), historical monthly/annual stdmet (no PTDY, 99.00/999/999.0/99.0 fill
// values, 2- or 4-digit years) or latest_obs.txt (STN, LAT, LON per row). stationID names
// the station of files without a STN column. Rows that cannot be read and impossible values
// are rejections; the rest of the file lands.
func ParseStdmet(stationID string, data []byte) (observation.Batch, error) {
	lines := splitLines(data)
	h, start, err := parseHeader(lines)
	if err != nil {
		return observation.Batch{}, err
	}
	yc, moc, dc, hc, mic := h.timeCols()
	stnc, latc, lonc := h.col("STN"), h.col("LAT"), h.col("LON")
	fixedID := CanonicalID(stationID)
	if stnc < 0 {
		if fixedID == "" {
			return observation.Batch{}, fmt.Errorf("ndbc: file has no STN column, so the station id must be given")
		}
		if err := contract.ValidExternalID(fixedID); err != nil {
			return observation.Batch{}, fmt.Errorf("ndbc: station id %q: %w", stationID, err)
		}
	}
	type valueCol struct {
		idx  int
		name string
		unit string
		col  column
	}
	var vcols []valueCol
	for j, name := range h.names {
		c, ok := columns[name]
		if !ok || h.index[name] != j {
			continue
		}
		unit := c.defaultUnit
		if j < len(h.units) {
			unit = h.units[j]
		}
		vcols = append(vcols, valueCol{j, name, unit, c})
	}
	rawPrefix, err := json.Marshal(map[string]string{"format": h.rawFormat, "header": h.text})
	if err != nil {
		return observation.Batch{}, fmt.Errorf("ndbc: encode raw header: %w", err)
	}
	// {"format":..,"header":..} -> {"format":..,"header":..,"line":
	rawPrefix = append(rawPrefix[:len(rawPrefix)-1], []byte(`,"line":`)...)

	b := batch.New(ProviderSlug)
	if h.rawFormat == RawHistorical {
		// The monthly and annual historical files are NDBC's quality-controlled archive:
		// their readings supersede the realtime2 file's for the same hour.
		b.SetRank(observation.RankQualityControlled)
	} else {
		// Realtime values are NDBC's before its quality control, which the historical
		// files carry: preliminary until one supersedes them.
		b.MarkAll(canon.FlagNotEvaluated, canon.ProviderPreliminary)
	}
	times := map[string][]time.Time{}
	rows := 0
	for n := start; n < len(lines); n++ {
		line := lines[n]
		if strings.TrimSpace(line) == "" {
			continue
		}
		lineNo := n + 1
		if strings.HasPrefix(strings.TrimSpace(line), "#") {
			continue // repeated header blocks of concatenated files
		}
		rows++
		f := strings.Fields(line)
		id := fixedID
		if stnc >= 0 && stnc < len(f) {
			id = CanonicalID(f[stnc])
		}
		if len(f) != len(h.names) {
			b.Reject(id, lineNo, "", batch.ReasonMalformedRow, fmt.Sprintf("row has %d fields, header has %d", len(f), len(h.names)))
			continue
		}
		if err := contract.ValidExternalID(id); err != nil {
			b.Reject("", lineNo, "STN", batch.ReasonMissingStation, fmt.Sprintf("station id %q: %v", batch.Truncate(id, 40), err))
			continue
		}
		ts, err := rowTime(f, yc, moc, dc, hc, mic)
		if err != nil {
			b.Reject(id, lineNo, "", batch.ReasonBadTimestamp, err.Error())
			continue
		}
		var lat, lon *float64
		if latc >= 0 && lonc >= 0 {
			la, e1 := strconv.ParseFloat(f[latc], 64)
			lo, e2 := strconv.ParseFloat(f[lonc], 64)
			var ok bool
			if e1 == nil && e2 == nil {
				lat, lon, ok = batch.Coord(la, lo)
			}
			if !ok {
				b.Reject(id, lineNo, "LAT/LON", batch.ReasonBadCoordinates, fmt.Sprintf("position %q %q is not a valid latitude/longitude", f[latc], f[lonc]))
			}
		}
		ms := b.Start(id, lineNo)
		for _, vc := range vcols {
			tok := f[vc.idx]
			if tok == "MM" {
				b.Missing()
				continue
			}
			v, err := strconv.ParseFloat(tok, 64)
			if err != nil {
				b.Reject(id, lineNo, vc.name, batch.ReasonBadNumber, fmt.Sprintf("%s = %q is not a number", vc.name, batch.Truncate(tok, 40)))
				continue
			}
			if v == vc.col.sentinel {
				b.Missing()
				continue
			}
			ms.Add(vc.name, vc.col.param, v, vc.unit)
		}
		lineJSON, err := json.Marshal(line)
		if err != nil {
			b.Reject(id, lineNo, "", batch.ReasonMalformedRow, err.Error())
			continue
		}
		raw := make([]byte, 0, len(rawPrefix)+len(lineJSON)+1)
		raw = append(append(append(raw, rawPrefix...), lineJSON...), '}')
		before := len(b.Rejections())
		ms.Emit(ts, lat, lon, raw, h.rawFormat)
		if len(b.Rejections()) == before {
			times[id] = append(times[id], ts)
		}
	}
	b.SetRecords(rows)
	return b.Finish(func(id string) contract.Station {
		st := stationFromID(id)
		st.ReportingIntervalS = batch.Interval(times[id], st.ReportingIntervalS)
		return st
	}), nil
}

// rowTime reads the time columns; years of two digits are 19xx from 50 on, else 20xx.
func rowTime(f []string, yc, moc, dc, hc, mic int) (time.Time, error) {
	var err error // the first column that is not an integer
	num := func(i int, name string) int {
		if i < 0 || err != nil {
			return 0
		}
		v, e := strconv.Atoi(f[i])
		if e != nil {
			err = fmt.Errorf("%s = %q is not an integer", name, batch.Truncate(f[i], 20))
		}
		return v
	}
	y, mo, d, hr, mi := num(yc, "year"), num(moc, "month"), num(dc, "day"), num(hc, "hour"), num(mic, "minute")
	if err != nil {
		return time.Time{}, err
	}
	switch {
	case y >= 0 && y < 50:
		y += 2000
	case y >= 50 && y < 100:
		y += 1900
	}
	if y < 1970 || y > 2200 || mo < 1 || mo > 12 || d < 1 || d > 31 || hr < 0 || hr > 23 || mi < 0 || mi > 59 {
		return time.Time{}, fmt.Errorf("time %04d-%02d-%02d %02d:%02d is not a valid date", y, mo, d, hr, mi)
	}
	t := time.Date(y, time.Month(mo), d, hr, mi, 0, 0, time.UTC)
	if t.Day() != d {
		return time.Time{}, fmt.Errorf("time %04d-%02d-%02d is not a calendar date", y, mo, d)
	}
	return t, nil
}

// stationFromID is what the id alone says: NDBC's all-digit ids are moored buoys
// (reporting every 10 minutes today), the others (TPLM2) are C-MAN/coastal fixed stations
// reporting hourly. activestations.xml, when ingested, supersedes this guess.
func stationFromID(id string) contract.Station {
	st := contract.Station{
		ExternalID:   id,
		Name:         "NDBC " + id,
		ProviderSlug: ProviderSlug,
		FeedSlug:     FeedSlug,
		Status:       "active",
	}
	if batch.IsDigits(id) {
		st.SensorType, st.ReportingIntervalS = SensorTypeBuoy, 600
	} else {
		st.SensorType, st.ReportingIntervalS = SensorTypeFixed, 3600
	}
	return st
}
