package science

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/formats"
	"github.com/sensorgate/sensorgate/pkg/netcdf"
)

// Station is one time series of a NetCDF export: a sensor, by its UUID.
type Station struct {
	ID, ExternalID, Name string
	Latitude, Longitude  *float64
}

// cf is what CF says of a canonical parameter: its standard name ("" where the CF table
// has none) and its unit in UDUNITS spelling.
type cf struct{ standardName, units string }

// cfParameters maps every canonical parameter (pkg/canon) to CF; a test checks that none
// is missing.
var cfParameters = map[string]cf{
	canon.AirTemperatureC:         {"air_temperature", "degree_Celsius"},
	canon.WaterTemperatureC:       {"sea_water_temperature", "degree_Celsius"},
	canon.DewPointC:               {"dew_point_temperature", "degree_Celsius"},
	canon.PM25:                    {"mass_concentration_of_pm2p5_ambient_aerosol_particles_in_air", "ug m-3"},
	canon.PM10:                    {"mass_concentration_of_pm10_ambient_aerosol_particles_in_air", "ug m-3"},
	canon.OzonePPB:                {"mole_fraction_of_ozone_in_air", "1e-9"},
	canon.AQI:                     {"", "1"},
	canon.WindSpeedMS:             {"wind_speed", "m s-1"},
	canon.WindDirectionDeg:        {"wind_from_direction", "degree"},
	canon.WindGustMS:              {"wind_speed_of_gust", "m s-1"},
	canon.WindSpeedAvg2MinMS:      {"wind_speed", "m s-1"},
	canon.WindDirectionAvg2MinDeg: {"wind_from_direction", "degree"},
	canon.AirPressureHPa:          {"air_pressure_at_mean_sea_level", "hPa"},
	canon.PressureTendencyHPa:     {"", "hPa"},
	canon.RelativeHumidityPercent: {"relative_humidity", "percent"},
	canon.VisibilityM:             {"visibility_in_air", "m"},
	canon.WaveHeightM:             {"sea_surface_wave_significant_height", "m"},
	canon.WavePeriodDominantS:     {"sea_surface_wave_period_at_variance_spectral_density_maximum", "s"},
	canon.WavePeriodAverageS:      {"sea_surface_wave_mean_period", "s"},
	canon.WaveDirectionDeg:        {"sea_surface_wave_from_direction_at_variance_spectral_density_maximum", "degree"},
	canon.WaterLevelM:             {"water_surface_height_above_reference_datum", "m"},
}

// CFStandardName and CFUnits are what a NetCDF export says of parameter id (for tests
// and documentation).
func CFStandardName(id string) string { return cfParameters[id].standardName }

// CFUnits is parameter id's unit in UDUNITS spelling.
func CFUnits(id string) string { return cfParameters[id].units }

// QARTOD flag values and their meanings, as the flag variables declare them.
var (
	FlagValues   = []int8{canon.FlagPass, canon.FlagNotEvaluated, canon.FlagSuspect, canon.FlagFail, canon.FlagMissing}
	FlagMeanings = "pass not_evaluated suspect fail missing"
)

// Conventions is the NetCDF export's Conventions attribute.
const Conventions = "CF-1.8, ACDD-1.3"

// ErrTooLarge is returned by a spool that passed its bound.
var ErrTooLarge = errors.New("the export is larger than a NetCDF export may spool")

// NetCDFSpool gathers a NetCDF export. A classic file states its sizes (the number of
// observations, which parameters) in its header, before its data, and an export learns
// them only at its end: the spool writes each reading compactly to a temporary file as
// it comes (memory holds one reading), then WriteTo writes the header and turns the spool
// into the file's records, reading it back in order. Disk is bounded by MaxBytes; memory
// by the station list (at most the export's 1,000 sensors) and one record.
type NetCDFSpool struct {
	f        *os.File
	bw       *bufio.Writer
	stations []Station
	index    map[string]int // station by UUID
	params   []canon.Parameter
	pindex   map[string]int
	seen     []bool // parameters that occur
	maxBytes int64
	bytes    int64
	readings int64
	rows     int64
	tmin     int64
	tmax     int64
	// the reading being gathered
	cur     reading
	hasCur  bool
	scratch []byte
	header  *netcdf.Header
}

type reading struct {
	station int
	ms      int64
	vals    []measured
}

type measured struct {
	param int
	value float64
	flag  int8
}

// NewNetCDFSpool starts a spool in dir (os.TempDir() when empty) for the stations, in
// the export's order, holding at most maxBytes.
func NewNetCDFSpool(dir string, stations []Station, maxBytes int64) (*NetCDFSpool, error) {
	f, err := os.CreateTemp(dir, "sensorgate-netcdf-*.spool")
	if err != nil {
		return nil, fmt.Errorf("netcdf spool: %w", err)
	}
	// The file has no name from here on: it goes when it is closed, or when the process
	// ends, whatever happens.
	_ = os.Remove(f.Name())
	s := &NetCDFSpool{f: f, bw: bufio.NewWriterSize(f, 256<<10), stations: stations, index: make(map[string]int, len(stations)),
		params: canon.Parameters(), pindex: map[string]int{}, maxBytes: maxBytes, tmin: math.MaxInt64, tmax: math.MinInt64}
	for i, st := range stations {
		s.index[st.ID] = i
	}
	for i, p := range s.params {
		s.pindex[p.ID] = i
	}
	s.seen = make([]bool, len(s.params))
	return s, nil
}

// Close removes the spool.
func (s *NetCDFSpool) Close() error { return s.f.Close() }

// Rows is the number of measurement rows spooled, Readings the number of readings
// (observations, one record each).
func (s *NetCDFSpool) Rows() int64     { return s.rows }
func (s *NetCDFSpool) Readings() int64 { return s.readings }

// CSVRecord adds one long-form CSV record (formats.ReadingHeader's columns first): the
// rows of one reading are consecutive, as the export orders them.
func (s *NetCDFSpool) CSVRecord(rec []string) error {
	if len(rec) < len(formats.ReadingHeader) {
		return fmt.Errorf("a row of %d fields, want %d", len(rec), len(formats.ReadingHeader))
	}
	st, ok := s.index[rec[0]]
	if !ok {
		return fmt.Errorf("a row of sensor %q, not one of the export's", rec[0])
	}
	p, ok := s.pindex[rec[3]]
	if !ok {
		return fmt.Errorf("a row of parameter %q, not a canonical one", rec[3])
	}
	ts, err := time.Parse(time.RFC3339, rec[2])
	if err != nil {
		return fmt.Errorf("timestamp %q: %w", rec[2], err)
	}
	v, err := parseFloat(rec[4])
	if err != nil {
		return fmt.Errorf("value %q: %w", rec[4], err)
	}
	flag, err := strconv.Atoi(rec[8])
	if err != nil || flag < 0 || flag > math.MaxInt8 {
		return fmt.Errorf("qc_flag %q is not a QARTOD code", rec[8])
	}
	return s.Add(st, ts.UnixMilli(), p, v, int8(flag))
}

// Add adds one measurement of station st (its index) at ms (Unix ms) of parameter p
// (index in canon.Parameters()).
func (s *NetCDFSpool) Add(st int, ms int64, p int, v float64, flag int8) error {
	if s.hasCur && (s.cur.station != st || s.cur.ms != ms) {
		if err := s.put(); err != nil {
			return err
		}
	}
	if !s.hasCur {
		s.cur = reading{station: st, ms: ms, vals: s.cur.vals[:0]}
		s.hasCur = true
	}
	s.cur.vals = append(s.cur.vals, measured{param: p, value: v, flag: flag})
	s.seen[p] = true
	s.rows++
	return nil
}

// put writes the current reading to the spool: station, time, count, then each
// measurement's parameter, value bits and flag.
func (s *NetCDFSpool) put() error {
	b := s.scratch[:0]
	b = binary.AppendUvarint(b, uint64(s.cur.station))
	b = binary.AppendVarint(b, s.cur.ms)
	b = binary.AppendUvarint(b, uint64(len(s.cur.vals)))
	for _, m := range s.cur.vals {
		b = append(b, byte(m.param))
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.value))
		b = append(b, byte(m.flag))
	}
	s.scratch = b
	s.bytes += int64(len(b))
	if s.bytes > s.maxBytes {
		return ErrTooLarge
	}
	if s.readings >= math.MaxUint32-1 {
		return ErrTooLarge
	}
	if _, err := s.bw.Write(b); err != nil {
		return fmt.Errorf("netcdf spool: %w", err)
	}
	s.readings++
	s.tmin, s.tmax = min(s.tmin, s.cur.ms), max(s.tmax, s.cur.ms)
	s.hasCur = false
	return nil
}

// Meta is what the file says of itself (ACDD global attributes).
type Meta struct {
	Title, Summary, Source, History string
	Created                         time.Time
}

// Finish ends the spool and lays out the file: its size, for Content-Length. WriteTo
// writes it.
func (s *NetCDFSpool) Finish(m Meta) (int64, error) {
	if s.hasCur {
		if err := s.put(); err != nil {
			return 0, err
		}
	}
	if err := s.bw.Flush(); err != nil {
		return 0, fmt.Errorf("netcdf spool: %w", err)
	}
	s.header = s.layout(m)
	return s.header.Size()
}

// vars of the file, in header order: the station variables, then the record variables
// station_index and time, then per parameter its value and its flag.
const (
	recStationIndex = 0
	recTime         = 1
	recFirstParam   = 2
)

func (s *NetCDFSpool) layout(m Meta) *netcdf.Header {
	idLen, extLen, nameLen := 36, 1, 1
	latMin, latMax, lonMin, lonMax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, st := range s.stations {
		idLen, extLen, nameLen = max(idLen, len(st.ID)), max(extLen, len(st.ExternalID)), max(nameLen, len(st.Name))
		if st.Latitude != nil && st.Longitude != nil {
			latMin, latMax = min(latMin, *st.Latitude), max(latMax, *st.Latitude)
			lonMin, lonMax = min(lonMin, *st.Longitude), max(lonMax, *st.Longitude)
		}
	}
	h := &netcdf.Header{
		Dims: []netcdf.Dim{{Name: "obs", Len: 0}, {Name: "station", Len: len(s.stations)},
			{Name: "id_strlen", Len: idLen}, {Name: "external_id_strlen", Len: extLen}, {Name: "name_strlen", Len: nameLen}},
		NumRecs: int(s.readings),
	}
	created := m.Created.UTC().Format("2006-01-02T15:04:05Z")
	h.Attrs = []netcdf.Attr{
		{Name: "Conventions", Value: Conventions},
		{Name: "featureType", Value: "timeSeries"},
		{Name: "cdm_data_type", Value: "TimeSeries"},
		{Name: "title", Value: m.Title},
		{Name: "summary", Value: m.Summary},
		{Name: "source", Value: m.Source},
		{Name: "history", Value: m.History},
		{Name: "date_created", Value: created},
		{Name: "creator_name", Value: "sensorgate"},
	}
	if s.readings > 0 {
		h.Attrs = append(h.Attrs,
			netcdf.Attr{Name: "time_coverage_start", Value: time.UnixMilli(s.tmin).UTC().Format("2006-01-02T15:04:05.000Z")},
			netcdf.Attr{Name: "time_coverage_end", Value: time.UnixMilli(s.tmax).UTC().Format("2006-01-02T15:04:05.000Z")})
	}
	if latMin <= latMax {
		h.Attrs = append(h.Attrs,
			netcdf.Attr{Name: "geospatial_lat_min", Value: latMin}, netcdf.Attr{Name: "geospatial_lat_max", Value: latMax},
			netcdf.Attr{Name: "geospatial_lat_units", Value: "degrees_north"},
			netcdf.Attr{Name: "geospatial_lon_min", Value: lonMin}, netcdf.Attr{Name: "geospatial_lon_max", Value: lonMax},
			netcdf.Attr{Name: "geospatial_lon_units", Value: "degrees_east"})
	}
	str := func(name string) netcdf.Attr { return netcdf.Attr{Name: "long_name", Value: name} }
	h.Vars = []netcdf.Var{
		{Name: "station_id", Type: netcdf.Char, Dims: []string{"station", "id_strlen"},
			Attrs: []netcdf.Attr{{Name: "cf_role", Value: "timeseries_id"}, str("sensor id (UUID)")}},
		{Name: "external_id", Type: netcdf.Char, Dims: []string{"station", "external_id_strlen"}, Attrs: []netcdf.Attr{str("provider's external id")}},
		{Name: "station_name", Type: netcdf.Char, Dims: []string{"station", "name_strlen"},
			Attrs: []netcdf.Attr{{Name: "standard_name", Value: "platform_name"}, str("sensor name")}},
		{Name: "lat", Type: netcdf.Double, Dims: []string{"station"}, Attrs: []netcdf.Attr{{Name: "standard_name", Value: "latitude"},
			str("latitude"), {Name: "units", Value: "degrees_north"}, {Name: "_FillValue", Value: netcdf.FillDouble}}},
		{Name: "lon", Type: netcdf.Double, Dims: []string{"station"}, Attrs: []netcdf.Attr{{Name: "standard_name", Value: "longitude"},
			str("longitude"), {Name: "units", Value: "degrees_east"}, {Name: "_FillValue", Value: netcdf.FillDouble}}},
		{Name: "station_index", Type: netcdf.Int, Dims: []string{"obs"},
			Attrs: []netcdf.Attr{str("index of the station (sensor) of the observation"), {Name: "instance_dimension", Value: "station"}}},
		{Name: "time", Type: netcdf.Double, Dims: []string{"obs"}, Attrs: []netcdf.Attr{{Name: "standard_name", Value: "time"},
			str("time of the reading"), {Name: "units", Value: "seconds since 1970-01-01T00:00:00Z"}, {Name: "calendar", Value: "standard"},
			{Name: "axis", Value: "T"}}},
	}
	for i, p := range s.params {
		if !s.seen[i] {
			continue
		}
		c := cfParameters[p.ID]
		attrs := []netcdf.Attr{str(p.Meaning)}
		if c.standardName != "" {
			attrs = append(attrs, netcdf.Attr{Name: "standard_name", Value: c.standardName})
		}
		attrs = append(attrs, netcdf.Attr{Name: "units", Value: c.units}, netcdf.Attr{Name: "_FillValue", Value: netcdf.FillDouble},
			netcdf.Attr{Name: "coordinates", Value: "time lat lon"}, netcdf.Attr{Name: "ancillary_variables", Value: p.ID + "_qc"})
		h.Vars = append(h.Vars,
			netcdf.Var{Name: p.ID, Type: netcdf.Double, Dims: []string{"obs"}, Attrs: attrs},
			netcdf.Var{Name: p.ID + "_qc", Type: netcdf.Byte, Dims: []string{"obs"}, Attrs: []netcdf.Attr{
				str("QARTOD aggregate quality flag of " + p.ID),
				{Name: "standard_name", Value: "aggregate_quality_flag"},
				{Name: "flag_values", Value: FlagValues},
				{Name: "flag_meanings", Value: FlagMeanings},
				{Name: "valid_range", Value: []int8{1, 9}},
				{Name: "references", Value: "https://ioos.noaa.gov/project/qartod/"},
			}})
	}
	return h
}

// WriteTo writes the file laid out by Finish: the header, the station variables, then
// one record per spooled reading (a parameter the reading lacks is _FillValue with flag
// 9, missing).
func (s *NetCDFSpool) WriteTo(out io.Writer) (int64, error) {
	if s.header == nil {
		return 0, errors.New("netcdf spool: WriteTo before Finish")
	}
	cw := &countWriter{w: out}
	w, err := netcdf.NewWriter(cw, s.header)
	if err != nil {
		return cw.n, err
	}
	n := len(s.stations)
	ids, exts, names := make([]string, n), make([]string, n), make([]string, n)
	lat, lon := make([]float64, n), make([]float64, n)
	idLen, extLen, nameLen := s.header.Dims[2].Len, s.header.Dims[3].Len, s.header.Dims[4].Len
	for i, st := range s.stations {
		ids[i], exts[i], names[i] = padRight(st.ID, idLen), padRight(st.ExternalID, extLen), padRight(st.Name, nameLen)
		lat[i], lon[i] = netcdf.FillDouble, netcdf.FillDouble
		if st.Latitude != nil && st.Longitude != nil {
			lat[i], lon[i] = *st.Latitude, *st.Longitude
		}
	}
	for _, f := range []struct {
		name string
		data any
	}{{"station_id", strings.Join(ids, "")}, {"external_id", strings.Join(exts, "")}, {"station_name", strings.Join(names, "")},
		{"lat", lat}, {"lon", lon}} {
		if err := w.Fixed(f.name, f.data); err != nil {
			return cw.n, err
		}
	}
	// The record variable of each parameter (its value; its flag follows it), -1 for a
	// parameter not in the file.
	slot := make([]int, len(s.params))
	next := recFirstParam
	for i := range s.params {
		slot[i] = -1
		if s.seen[i] {
			slot[i] = next
			next += 2
		}
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return cw.n, fmt.Errorf("netcdf spool: %w", err)
	}
	br := bufio.NewReaderSize(s.f, 256<<10)
	rec := w.NewRecord()
	for range s.readings {
		st, err := binary.ReadUvarint(br)
		if err != nil {
			return cw.n, fmt.Errorf("netcdf spool: %w", err)
		}
		ms, err := binary.ReadVarint(br)
		if err != nil {
			return cw.n, fmt.Errorf("netcdf spool: %w", err)
		}
		cnt, err := binary.ReadUvarint(br)
		if err != nil {
			return cw.n, fmt.Errorf("netcdf spool: %w", err)
		}
		for i := range s.params {
			if slot[i] >= 0 {
				rec.SetDouble(slot[i], netcdf.FillDouble)
				rec.SetByte(slot[i]+1, canon.FlagMissing)
			}
		}
		rec.SetInt(recStationIndex, int32(st))
		rec.SetDouble(recTime, float64(ms)/1000)
		var m [10]byte
		for range cnt {
			if _, err := io.ReadFull(br, m[:]); err != nil {
				return cw.n, fmt.Errorf("netcdf spool: %w", err)
			}
			j := slot[m[0]]
			rec.SetDouble(j, math.Float64frombits(binary.LittleEndian.Uint64(m[1:9])))
			rec.SetByte(j+1, int8(m[9]))
		}
		if err := w.Record(rec); err != nil {
			return cw.n, err
		}
	}
	return cw.n, w.Close()
}

// padRight cuts or pads s with NULs to n bytes (a fixed-width char row; readers stop at
// the first NUL).
func padRight(s string, n int) string {
	if len(s) >= n {
		return s[:n]
	}
	return s + strings.Repeat("\x00", n-len(s))
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
