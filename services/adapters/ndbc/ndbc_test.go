package ndbc

import (
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/services/adapters/internal/adaptertest"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

type want struct {
	station string
	at      time.Time
	values  map[string]float64 // canonical parameter -> value; absent parameters listed in missing
	missing []string
}

func checkObs(t *testing.T, b observation.Batch, w want) {
	t.Helper()
	for _, o := range b.Observations {
		if o.StationID != w.station || !o.Time.Equal(w.at) {
			continue
		}
		for p, v := range w.values {
			got, ok := adaptertest.Value(o, p)
			if !ok || got != v {
				t.Errorf("%s %s %s = %v (present %v), want %v", w.station, w.at.Format(time.RFC3339), p, got, ok, v)
			}
		}
		for _, p := range w.missing {
			if got, ok := adaptertest.Value(o, p); ok {
				t.Errorf("%s %s %s = %v, want missing", w.station, w.at.Format(time.RFC3339), p, got)
			}
		}
		return
	}
	t.Errorf("no observation of %s at %s", w.station, w.at.Format(time.RFC3339))
}

func utc(s string) time.Time {
	t, err := time.Parse("2006-01-02 15:04", s)
	if err != nil {
		panic(err)
	}
	return t
}

// Golden values below were read by hand from the recorded files.
func TestParseStdmetGolden(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file, station string
		shared        bool
		obs           int
		rejections    map[string]int
		rawFormat     string
		interval      int
		checks        []want
		countParam    string
		countWant     int
	}{
		{
			file: "ndbc/41002.txt", station: "41002", shared: true, obs: 1440, rawFormat: RawRealtime2, interval: 600,
			checks: []want{
				// 2018 08 01 15 10 160  6.0  7.0    MM    MM    MM  MM 1022.9    MM  28.0 ...
				{"41002", utc("2018-08-01 15:10"), map[string]float64{canon.WindDirectionDeg: 160, canon.WindSpeedMS: 6.0, canon.AirPressureHPa: 1022.9, canon.WaterTemperatureC: 28.0}, []string{canon.AirTemperatureC, canon.WaveHeightM}},
				// 2018 08 01 14 50 150  7.0  8.0   1.2     6   4.5 209 1023.0    MM  28.0 ...
				{"41002", utc("2018-08-01 14:50"), map[string]float64{canon.WaveHeightM: 1.2, canon.WindSpeedMS: 7.0, canon.AirPressureHPa: 1023.0}, nil},
				// oldest row: 2018 07 22 13 40 180  6.0  8.0 MM ... 1013.1 MM 26.8
				{"41002", utc("2018-07-22 13:40"), map[string]float64{canon.WindDirectionDeg: 180, canon.AirPressureHPa: 1013.1, canon.WaterTemperatureC: 26.8}, nil},
			},
			countParam: canon.WaveHeightM, countWant: 307, // awk: rows whose WVHT is not MM
		},
		{
			file: "ndbc/TPLM2.txt", station: "tplm2", shared: true, obs: 1094, rawFormat: RawRealtime2, interval: 3600,
			checks: []want{
				// 2022 08 13 18 00  10  4.1  5.1 MM MM MM MM 1020.8  23.3    MM ...
				{"TPLM2", utc("2022-08-13 18:00"), map[string]float64{canon.WindDirectionDeg: 10, canon.WindSpeedMS: 4.1, canon.AirPressureHPa: 1020.8, canon.AirTemperatureC: 23.3}, []string{canon.WaterTemperatureC}},
			},
		},
		{
			file: "ndbc/tplm272022.txt", station: "TPLM2", shared: true, obs: 740, rawFormat: RawHistorical, interval: 3600,
			checks: []want{
				// 2022 07 04 12 00  13  5.2  6.0 99.00 99.00 99.00 999 1023.0  23.6  25.2 999.0 99.0 99.00
				{"TPLM2", utc("2022-07-04 12:00"), map[string]float64{canon.WindDirectionDeg: 13, canon.WindSpeedMS: 5.2, canon.AirPressureHPa: 1023.0, canon.AirTemperatureC: 23.6, canon.WaterTemperatureC: 25.2}, []string{canon.WaveHeightM}},
			},
			countParam: canon.WaveHeightM, countWant: 0, // all 99.00
		},
		{
			file: "ndbc/tplm2h2020.txt", station: "TPLM2", shared: true, obs: 2182, rawFormat: RawHistorical, interval: 3600,
			checks: []want{
				// 2020 02 29 12 00 282  7.1  8.6 99.00 99.00 99.00 999 1015.3  -0.1   5.4  -9.7 99.0 99.00
				{"TPLM2", utc("2020-02-29 12:00"), map[string]float64{canon.WindDirectionDeg: 282, canon.WindSpeedMS: 7.1, canon.AirPressureHPa: 1015.3, canon.AirTemperatureC: -0.1, canon.WaterTemperatureC: 5.4}, []string{canon.WaveHeightM}},
			},
			countParam: canon.AirTemperatureC, countWant: 2182,
		},
		{
			file: "ndbc/latest_obs.txt", shared: true, obs: 840, rawFormat: RawLatestObs,
			checks: []want{
				// 46042  36.785 -122.398 2018 07 30 20 50 320  11.0  13.0  1.6   7  4.5 314 1015.1  -0.5  13.6  14.3
				{"46042", utc("2018-07-30 20:50"), map[string]float64{canon.WindDirectionDeg: 320, canon.WindSpeedMS: 11.0, canon.WaveHeightM: 1.6, canon.AirPressureHPa: 1015.1, canon.AirTemperatureC: 13.6, canon.WaterTemperatureC: 14.3}, nil},
				// TPLM2  38.899  -76.436 2018 07 30 21 00 120   5.1   6.2 MM MM MM MM 1019.8  +0.0  22.5  25.7
				{"TPLM2", utc("2018-07-30 21:00"), map[string]float64{canon.AirTemperatureC: 22.5, canon.WaterTemperatureC: 25.7}, nil},
			},
		},
		{
			file: "41002_excerpt.txt", station: "41002", obs: 6, rawFormat: RawRealtime2, interval: 600,
			checks: []want{
				{"41002", utc("2018-08-01 15:10"), map[string]float64{canon.WindDirectionDeg: 160, canon.WindSpeedMS: 6.0, canon.AirPressureHPa: 1022.9, canon.WaterTemperatureC: 28.0}, []string{canon.AirTemperatureC}},
				{"41002", utc("2018-08-01 14:40"), map[string]float64{canon.WaveHeightM: 1.2, canon.AirPressureHPa: 1022.9}, nil},
			},
			countParam: canon.WaveHeightM, countWant: 2,
		},
		{
			file: "tplm2h2020_excerpt.txt", station: "TPLM2", obs: 3, rawFormat: RawHistorical, interval: 3600,
			checks: []want{
				{"TPLM2", utc("2020-02-29 14:00"), map[string]float64{canon.WindDirectionDeg: 294, canon.WindSpeedMS: 7.9, canon.AirPressureHPa: 1016.5, canon.AirTemperatureC: -0.5, canon.WaterTemperatureC: 5.5}, []string{canon.WaveHeightM}},
			},
		},
		{
			file: "latest_obs_excerpt.txt", obs: 3, rawFormat: RawLatestObs,
			checks: []want{
				{"41002", utc("2018-07-30 21:10"), map[string]float64{canon.WindDirectionDeg: 190, canon.WindSpeedMS: 4.0, canon.AirPressureHPa: 1019.8, canon.WaterTemperatureC: 27.8}, []string{canon.AirTemperatureC, canon.WaveHeightM}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			var data []byte
			if tt.shared {
				data = adaptertest.ProviderFile(t, tt.file)
			} else {
				data = adaptertest.Testdata(t, tt.file)
			}
			b, err := Adapter().Parse(observation.Payload{Format: FormatStdmet, StationID: tt.station, Body: data})
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckBatch(t, b)
			if len(b.Observations) != tt.obs {
				t.Errorf("observations = %d, want %d", len(b.Observations), tt.obs)
			}
			if len(b.Rejections) != 0 {
				t.Errorf("rejections = %v, want none", adaptertest.Reasons(b))
			}
			for _, o := range b.Observations {
				if o.RawFormat != tt.rawFormat {
					t.Fatalf("raw format %q, want %q", o.RawFormat, tt.rawFormat)
				}
			}
			for _, c := range tt.checks {
				checkObs(t, b, c)
			}
			if tt.countParam != "" {
				n := 0
				for _, o := range b.Observations {
					if _, ok := adaptertest.Value(o, tt.countParam); ok {
						n++
					}
				}
				if n != tt.countWant {
					t.Errorf("%s values = %d, want %d", tt.countParam, n, tt.countWant)
				}
			}
			if tt.interval != 0 {
				if len(b.Stations) != 1 || b.Stations[0].ReportingIntervalS != tt.interval || b.Stations[0].ExternalID != strings.ToUpper(tt.station) {
					t.Errorf("stations = %+v, want one %s every %d s", b.Stations, strings.ToUpper(tt.station), tt.interval)
				}
			}
		})
	}
}

func TestParseStdmetRaw(t *testing.T) {
	t.Parallel()
	b, err := ParseStdmet("41002", adaptertest.Testdata(t, "41002_excerpt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"format":"ndbc.realtime2.stdmet","header":"#YY  MM DD hh mm WDIR WSPD GST  WVHT   DPD   APD MWD   PRES  ATMP  WTMP  DEWP  VIS PTDY  TIDE\n#yr  mo dy hr mn degT m/s  m/s     m   sec   sec degT   hPa  degC  degC  degC  nmi  hPa    ft","line":"2018 08 01 15 10 160  6.0  7.0    MM    MM    MM  MM 1022.9    MM  28.0    MM   MM   MM    MM"}`
	if got := string(b.Observations[0].Raw); got != want {
		t.Errorf("raw =\n%s\nwant\n%s", got, want)
	}
	m := b.Observations[0].Measurements[0]
	if m.Parameter != canon.WindDirectionDeg || m.UnitOriginal != "degT" || m.Unit != canon.Degrees {
		t.Errorf("first measurement = %+v", m)
	}
}

func TestParseStdmetLatestPositions(t *testing.T) {
	t.Parallel()
	b, err := ParseStdmet("", adaptertest.Testdata(t, "latest_obs_excerpt.txt"))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range b.Observations {
		if o.StationID == "46042" && (o.Lat == nil || *o.Lat != 36.785 || *o.Lon != -122.398) {
			t.Errorf("46042 position = %v,%v", o.Lat, o.Lon)
		}
	}
	if len(b.Stations) != 3 || b.Stations[2].ExternalID != "TPLM2" || b.Stations[2].SensorType != SensorTypeFixed || b.Stations[0].SensorType != SensorTypeBuoy {
		t.Errorf("stations = %+v", b.Stations)
	}
}

func TestParseStdmetBadInput(t *testing.T) {
	t.Parallel()
	const hdr = "#YY  MM DD hh mm WDIR WSPD GST  WVHT   DPD   APD MWD   PRES  ATMP  WTMP  DEWP  VIS PTDY  TIDE\n" +
		"#yr  mo dy hr mn degT m/s  m/s     m   sec   sec degT   hPa  degC  degC  degC  nmi  hPa    ft\n"
	const good = "2018 08 01 15 10 160  6.0  7.0    MM    MM    MM  MM 1022.9    MM  28.0    MM   MM   MM    MM\n"
	tests := []struct {
		name    string
		station string
		body    string
		err     bool
		obs     int
		reasons map[string]int
	}{
		{name: "empty", station: "41002", body: "", err: true},
		{name: "not a header", station: "41002", body: good, err: true},
		{name: "html error page", station: "41002", body: "<html><body>404</body></html>", err: true},
		{name: "no station id", body: hdr + good, err: true},
		{name: "bad station id", station: "../etc", body: hdr + good, err: true},
		{name: "header without time columns", station: "X", body: "#A B C\n1 2 3\n", err: true},
		{name: "short row", station: "41002", body: hdr + good + "2018 08 01 15 00 150  7.0\n", obs: 1, reasons: map[string]int{batch.ReasonMalformedRow: 1}},
		{name: "long row", station: "41002", body: hdr + good + strings.TrimSuffix(good, "\n") + " 9\n", obs: 1, reasons: map[string]int{batch.ReasonMalformedRow: 1}},
		{name: "bad date", station: "41002", body: hdr + good + "2018 13 01 15 00 150  7.0  8.0 MM MM MM MM 1023.0 MM 28.0 MM MM MM MM\n", obs: 1, reasons: map[string]int{batch.ReasonBadTimestamp: 1}},
		{name: "feb 30", station: "41002", body: hdr + "2018 02 30 15 00 150  7.0  8.0 MM MM MM MM 1023.0 MM 28.0 MM MM MM MM\n", reasons: map[string]int{batch.ReasonBadTimestamp: 1}},
		{name: "impossible values", station: "41002", body: hdr + "2018 08 01 15 00 400  7.0  8.0 31.0 MM MM MM 2000.0 MM 28.0 MM MM MM MM\n", obs: 1, reasons: map[string]int{"out_of_range": 3}},
		{name: "not a number and NaN", station: "41002", body: hdr + "2018 08 01 15 00 1x0 NaN 8.0 MM MM MM MM 1000.0 MM +Inf MM MM MM MM\n", obs: 1, reasons: map[string]int{batch.ReasonBadNumber: 1, "not_finite": 2}},
		{name: "all missing", station: "41002", body: hdr + "2018 08 01 15 00 MM MM MM MM MM MM MM MM MM MM MM MM MM MM\n", reasons: map[string]int{batch.ReasonNoMeasurements: 1}},
		{name: "duplicate row", station: "41002", body: hdr + good + good, obs: 1, reasons: map[string]int{batch.ReasonDuplicate: 1}},
		{name: "crlf and two-digit year", station: "tplm2", body: "YY MM DD hh WD WSPD GST WVHT DPD APD MWD BAR ATMP WTMP DEWP VIS\r\n98 01 01 00 270 5.0 6.0 99.00 99.00 99.00 999 1012.0 5.0 999.0 999.0 99.0\r\n", obs: 1},
		{name: "sentinels are missing, not numbers", station: "TPLM2", body: "#YY  MM DD hh mm WDIR WSPD GST  WVHT   DPD   APD MWD   PRES  ATMP  WTMP  DEWP  VIS  TIDE\n#yr  mo dy hr mn degT m/s  m/s     m   sec   sec deg    hPa  degC  degC  degC  nmi    ft\n2022 07 01 00 00 999 99.0 7.6 99.00 99.00 99.00 999 9999.0 999.0 25.1 999.0 99.0 99.00\n", obs: 1},
		{name: "latest_obs bad position", body: "#STN LAT LON YYYY MM DD hh mm WDIR\n#text deg deg yr mo day hr mn degT\n41002 95.0 -74.8 2018 07 30 21 10 190\n", obs: 1, reasons: map[string]int{batch.ReasonBadCoordinates: 1}},
		{name: "unknown unit", station: "41002", body: "#YY MM DD hh mm WSPD ATMP\n#yr mo dy hr mn furlong degC\n2018 08 01 15 10 5.0 20.0\n", obs: 1, reasons: map[string]int{"unknown_unit": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := ParseStdmet(tt.station, []byte(tt.body))
			if tt.err {
				if err == nil {
					t.Fatalf("want an error, got %d observations", len(b.Observations))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			adaptertest.CheckCounts(t, b, tt.obs, tt.reasons)
		})
	}
}

func TestParseStdmetSentinelRow(t *testing.T) {
	t.Parallel()
	b, err := ParseStdmet("TPLM2", []byte("#YY  MM DD hh mm WDIR WSPD GST  WVHT   DPD   APD MWD   PRES  ATMP  WTMP  DEWP  VIS  TIDE\n#yr  mo dy hr mn degT m/s  m/s     m   sec   sec deg    hPa  degC  degC  degC  nmi    ft\n2022 07 01 00 00 999 99.0 7.6 99.00 99.00 99.00 999 9999.0 999.0 25.1 999.0 99.0 99.00\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Every other column holds its fill value; GST 7.6 m/s is real.
	ms := b.Observations[0].Measurements
	if len(ms) != 2 || ms[0].Parameter != canon.WindGustMS || ms[0].Value != 7.6 || ms[1].Parameter != canon.WaterTemperatureC || ms[1].Value != 25.1 {
		t.Errorf("measurements = %+v, want only gust 7.6 and water temperature 25.1", ms)
	}
}

// TestTPLM2LowPressureIsKept: in the annual file tplm2h2020.txt the row 2020 02 02 21:00
// reads PRES 999.0, a real low (the rows around it read 999.9 at 20:00 and fall smoothly);
// PRES's fill value is 9999.0, so 999.0 hPa is a reading, while ATMP/WTMP/DEWP 999.0 are fill.
func TestTPLM2LowPressureIsKept(t *testing.T) {
	t.Parallel()
	b, err := ParseStdmet("TPLM2", adaptertest.ProviderFile(t, "ndbc/tplm2h2020.txt"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2020, 2, 2, 21, 0, 0, 0, time.UTC)
	for _, o := range b.Observations {
		if !o.Time.Equal(at) {
			continue
		}
		if v, ok := adaptertest.Value(o, canon.AirPressureHPa); !ok || v != 999.0 {
			t.Fatalf("PRES at %s = %v (%v), want 999.0 hPa kept", at, v, ok)
		}
		if v, _ := adaptertest.Value(o, canon.WindGustMS); v != 12.8 {
			t.Errorf("GST = %v, want 12.8", v)
		}
		return
	}
	t.Fatalf("no observation at %s", at)
}

func TestParseActiveStations(t *testing.T) {
	t.Parallel()
	b, err := Adapter().Parse(observation.Payload{Format: FormatActiveStations, Body: adaptertest.Testdata(t, "activestations_excerpt.xml")})
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	byID := map[string]int{}
	for i, s := range b.Stations {
		byID[s.ExternalID] = i
	}
	tests := []struct {
		id, name, typ string
		lat, lon      float64
		types         int
	}{
		{"TPLM2", "Thomas Point, MD", SensorTypeFixed, 38.899, -76.436, 5},
		{"41002", "SOUTH HATTERAS - 225 NM South of Cape Hatteras", SensorTypeBuoy, 31.759, -74.936, 6},
		{"46042", "MONTEREY - 27NM WNW of Monterey, CA", SensorTypeBuoy, 36.785, -122.396, 0},
		{"0Y2W3", "Sturgeon Bay CG Station, WI", SensorTypeFixed, 44.794, -87.313, 0},
		{"13001", "NE Extension", SensorTypeBuoy, 12, -23, 6},
	}
	if len(b.Stations) != len(tests) {
		t.Fatalf("stations = %d, want %d", len(b.Stations), len(tests))
	}
	if d := b.Stations[byID["TPLM2"]].Description; d != "NDBC; NDBC Meteorological/Ocean; NDBC type fixed; measures meteorology; elevation 0 m" {
		t.Errorf("TPLM2 description = %q", d)
	}
	for _, tt := range tests {
		i, ok := byID[tt.id]
		if !ok {
			t.Errorf("station %s missing", tt.id)
			continue
		}
		s := b.Stations[i]
		if s.Name != tt.name || s.SensorType != tt.typ || *s.Latitude != tt.lat || *s.Longitude != tt.lon || len(s.DataTypes) != tt.types || s.ProviderSlug != ProviderSlug || s.FeedSlug != FeedSlug {
			t.Errorf("station %s = %+v", tt.id, s)
		}
	}
}

func TestParseActiveStationsShared(t *testing.T) {
	t.Parallel()
	b, err := ParseActiveStations(adaptertest.ProviderFile(t, "ndbc/activestations.xml"))
	if err != nil {
		t.Fatal(err)
	}
	adaptertest.CheckBatch(t, b)
	// count="1348"; 911 stations have met="y".
	if len(b.Stations) != 1348 || len(b.Rejections) != 0 {
		t.Fatalf("stations = %d, rejections = %v; want 1348, none", len(b.Stations), b.Rejections)
	}
	met := 0
	for _, s := range b.Stations {
		if len(s.DataTypes) > 0 {
			met++
		}
	}
	if met != 911 {
		t.Errorf("stations with data types = %d, want 911", met)
	}
}

func TestParseActiveStationsBad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		err      bool
		stations int
		reasons  map[string]int
	}{
		{name: "not xml", body: "{}", err: true},
		{name: "empty", body: "", err: true},
		{name: "other root", body: "<html><station id=\"x\"/></html>", err: true},
		{name: "bad position and id", body: `<stations><station id="a1" lat="91" lon="0"/><station id="" lat="1" lon="1"/><station id="b2" lat="x" lon="1"/><station id="c3" lat="1" lon="2" met="y" type="buoy"/></stations>`, stations: 1, reasons: map[string]int{batch.ReasonBadCoordinates: 2, batch.ReasonMissingStation: 1}},
		{name: "truncated", body: `<stations><station id="c3" lat="1" lon="2"/><station id="d4" lat=`, stations: 1, reasons: map[string]int{batch.ReasonMalformedRow: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b, err := ParseActiveStations([]byte(tt.body))
			if tt.err {
				if err == nil {
					t.Fatalf("want an error, got %+v", b)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(b.Stations) != tt.stations {
				t.Errorf("stations = %d, want %d", len(b.Stations), tt.stations)
			}
			got := adaptertest.Reasons(b)
			for r, n := range tt.reasons {
				if got[r] != n {
					t.Errorf("rejections[%s] = %d, want %d (all %v)", r, got[r], n, got)
				}
			}
		})
	}
}

func TestParseUnknownFormat(t *testing.T) {
	t.Parallel()
	if _, err := Adapter().Parse(observation.Payload{Format: "ndbc.spectral"}); err == nil {
		t.Fatal("want an error for an unknown format")
	}
}
