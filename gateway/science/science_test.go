package science_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/science"
	"github.com/sensorgate/sensorgate/pkg/canon"
)

func bytesReader(b []byte) *bytes.Reader { return bytes.NewReader(b) }

const (
	s1 = "0b6f4a44-1f0e-5b1e-9d7a-2f0c3a1b0001"
	s2 = "7c1d2e3f-4a5b-5c6d-8e9f-0a1b2c3d0002"
)

// records are long-form CSV rows as a service's export writes them: two sensors, two
// parameters, every QARTOD flag (1 pass, 2 not evaluated, 3 suspect, 4 fail), and a
// reading that lacks one parameter.
var records = [][]string{
	{s1, "41001", "2026-06-01T00:00:00.000Z", canon.WaterTemperatureC, "20.1", "celsius", "68.18", "degF", "2"},
	{s1, "41001", "2026-06-01T00:00:00.000Z", canon.WaveHeightM, "1.5", "m", "1.5", "m", "2"},
	{s1, "41001", "2026-06-01T00:10:00.000Z", canon.WaterTemperatureC, "20.2", "celsius", "20.2", "degC", "1"},
	{s1, "41001", "2026-06-01T00:20:00.123Z", canon.WaterTemperatureC, "35", "celsius", "35", "degC", "4"},
	{s1, "41001", "2026-06-01T00:20:00.123Z", canon.WaveHeightM, "9.75", "m", "9.75", "m", "3"},
	{s2, "ab/c d", "2026-06-01T00:05:00.000Z", canon.WaveHeightM, "-0.25", "m", "-0.25", "m", "1"},
}

// TestParquetReadByDuckDB writes the records with both codecs and a row group size that
// cuts them into several groups, and has DuckDB read each file back: the column types of
// the contract (UTC timestamp, DOUBLE, INTEGER flag) and every row, flags included.
func TestParquetReadByDuckDB(t *testing.T) {
	for _, o := range []science.ParquetOptions{{}, {Codec: "snappy", RowGroupRows: 4}} {
		t.Run(o.Codec+fmt.Sprint(o.RowGroupRows), func(t *testing.T) {
			var buf bytes.Buffer
			pw, err := science.NewParquet(&buf, false, o)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range records {
				if err := pw.CSVRecord(r); err != nil {
					t.Fatal(err)
				}
			}
			if err := pw.Close(); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "x.parquet")
			if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			got := readParquet(t, file)
			types := map[string]string{}
			for _, c := range got.Schema {
				types[c.Name] = c.Type
			}
			want := map[string]string{"sensor_id": "VARCHAR", "external_id": "VARCHAR", "timestamp": "TIMESTAMP WITH TIME ZONE",
				"parameter": "VARCHAR", "value": "DOUBLE", "unit": "VARCHAR", "value_original": "DOUBLE", "unit_original": "VARCHAR", "qc_flag": "INTEGER"}
			if !reflect.DeepEqual(types, want) {
				t.Errorf("schema %v, want %v", types, want)
			}
			if len(got.Rows) != len(records) {
				t.Fatalf("%d rows, want %d", len(got.Rows), len(records))
			}
			for i, r := range records {
				g := got.Rows[i]
				ts, _ := time.Parse(time.RFC3339, r[2])
				if g["sensor_id"] != r[0] || g["external_id"] != r[1] || g["parameter"] != r[3] || g["unit"] != r[5] || g["unit_original"] != r[7] ||
					fmt.Sprint(g["value"]) != r[4] || fmt.Sprint(g["value_original"]) != r[6] || fmt.Sprint(g["qc_flag"]) != r[8] ||
					g["timestamp_ms"] != float64(ts.UnixMilli()) || g["timestamp_utc"] != r[2] {
					t.Errorf("row %d: %v, want %v", i, g, r)
				}
			}
			codec := "ZSTD"
			if o.Codec == "snappy" {
				codec = "SNAPPY"
			}
			if got.Meta.Compression != codec || (o.RowGroupRows == 4 && got.Meta.RowGroups != 2) {
				t.Errorf("metadata %+v, want %s and 2 row groups of at most 4 rows", got.Meta, codec)
			}
		})
	}
}

func f64(v float64) *float64 { return &v }

// TestNetCDFReadByNetCDF4XarrayAndPandas spools the records, writes the file and checks
// it with three independent readers: ncdump -h (netCDF-C), netCDF4-python (attributes
// against the contract), xarray (CF time decoding) and pandas (values, flags).
func TestNetCDFReadByNetCDF4XarrayAndPandas(t *testing.T) {
	stations := []science.Station{
		{ID: s1, ExternalID: "41001", Name: "East Hatteras", Latitude: f64(34.7), Longitude: f64(-72.7)},
		{ID: s2, ExternalID: "ab/c d", Name: "Ünïcode station"},
		{ID: "ffffffff-0000-5000-8000-000000000003", ExternalID: "quiet", Name: "no readings"},
	}
	sp, err := science.NewNetCDFSpool(t.TempDir(), stations, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	for _, r := range records {
		if err := sp.CSVRecord(r); err != nil {
			t.Fatal(err)
		}
	}
	created := time.Date(2026, 6, 2, 3, 4, 5, 0, time.UTC)
	size, err := sp.Finish(science.Meta{Title: "t", Summary: "s", Source: "sensorgate services: ocean", History: "h", Created: created})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	n, err := sp.WriteTo(&buf)
	if err != nil || n != size || int64(buf.Len()) != size {
		t.Fatalf("WriteTo: %d bytes, %v; Finish said %d", n, err, size)
	}
	file := filepath.Join(t.TempDir(), "x.nc")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	hdr := ncdumpHeader(t, file)
	for _, want := range []string{"obs = UNLIMITED ; // (4 currently)", "station = 3 ;", `:featureType = "timeSeries" ;`,
		`station_id:cf_role = "timeseries_id" ;`, `water_temperature_c_qc:standard_name = "aggregate_quality_flag" ;`,
		`wave_height_m_qc:flag_values = 1b, 2b, 3b, 4b, 9b ;`} {
		if !strings.Contains(hdr, want) {
			t.Errorf("ncdump -h lacks %q:\n%s", want, hdr)
		}
	}
	got := readNetCDF(t, file)
	if got.FileFormat != "NETCDF3_64BIT_OFFSET" || !reflect.DeepEqual(got.Unlimited, []string{"obs"}) || got.Dims["station"] != 3 {
		t.Errorf("format %s, unlimited %v, dims %v", got.FileFormat, got.Unlimited, got.Dims)
	}
	for k, v := range map[string]string{"Conventions": "CF-1.8, ACDD-1.3", "featureType": "timeSeries", "title": "t", "summary": "s",
		"source": "sensorgate services: ocean", "history": "h", "date_created": "2026-06-02T03:04:05Z",
		"time_coverage_start": "2026-06-01T00:00:00.000Z", "time_coverage_end": "2026-06-01T00:20:00.123Z"} {
		if got.Global[k] != v {
			t.Errorf("global %s = %v, want %q", k, got.Global[k], v)
		}
	}
	if !reflect.DeepEqual(got.StationID, []string{s1, s2, stations[2].ID}) || got.ExternalID[1] != "ab/c d" {
		t.Errorf("stations %v %v", got.StationID, got.ExternalID)
	}
	if a := got.Vars["station_id"].Attrs; a["cf_role"] != "timeseries_id" {
		t.Errorf("station_id attrs %v", a)
	}
	if a := got.Vars["time"].Attrs; a["units"] != "seconds since 1970-01-01T00:00:00Z" || a["standard_name"] != "time" ||
		!strings.HasPrefix(got.TimeDtype, "datetime64") || !strings.HasPrefix(got.PandasTime, "datetime64") {
		t.Errorf("time attrs %v, xarray %s, pandas %s", a, got.TimeDtype, got.PandasTime)
	}
	for _, p := range []string{canon.WaterTemperatureC, canon.WaveHeightM} {
		a := got.Vars[p].Attrs
		if a["standard_name"] != science.CFStandardName(p) || a["units"] != science.CFUnits(p) || fmt.Sprint(a["_FillValue"]) != "9.969209968386869e+36" {
			t.Errorf("%s attrs %v", p, a)
		}
		q := got.Vars[p+"_qc"]
		if q.Dtype != "int8" || q.Attrs["standard_name"] != "aggregate_quality_flag" || q.Attrs["flag_meanings"] != science.FlagMeanings ||
			fmt.Sprint(q.Attrs["flag_values"]) != "[1 2 3 4 9]" {
			t.Errorf("%s_qc %+v", p, q)
		}
	}
	if _, ok := got.Vars[canon.AirTemperatureC]; ok {
		t.Error("a variable for a parameter no row has")
	}
	// Per observation: station, time (ms), values (null: _FillValue) and flags (9: missing).
	want := map[string][]any{
		"station_index":                 {0, 0, 0, 1},
		"time_ms":                       {1780272000000, 1780272600000, 1780273200123, 1780272300000},
		canon.WaterTemperatureC:         {20.1, 20.2, 35, nil},
		canon.WaterTemperatureC + "_qc": {2, 1, 4, 9},
		canon.WaveHeightM:               {1.5, nil, 9.75, -0.25},
		canon.WaveHeightM + "_qc":       {2, 9, 3, 1},
	}
	for k, w := range want {
		var g []string
		for _, x := range got.Obs[k] {
			if x == nil {
				g = append(g, "<nil>")
			} else {
				g = append(g, x.String())
			}
		}
		var ws []string
		for _, x := range w {
			ws = append(ws, strings.Replace(fmt.Sprint(x), "<nil>", "<nil>", 1))
		}
		if !numsEqual(g, ws) {
			t.Errorf("%s = %v, want %v", k, g, ws)
		}
	}
	if got.PandasRows != 4 {
		t.Errorf("pandas: %d rows, want 4", got.PandasRows)
	}
}

// numsEqual compares numbers by value (pandas writes 35.0 where Go writes 35).
func numsEqual(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] == b[i] {
			continue
		}
		var x, y float64
		if _, err := fmt.Sscan(a[i], &x); err != nil {
			return false
		}
		if _, err := fmt.Sscan(b[i], &y); err != nil || x != y || math.IsNaN(x) {
			return false
		}
	}
	return true
}

// TestEveryParameterHasCFUnits: a canonical parameter added to pkg/canon needs its CF
// units (and standard name where CF has one) here.
func TestEveryParameterHasCFUnits(t *testing.T) {
	for _, p := range canon.Parameters() {
		if science.CFUnits(p.ID) == "" {
			t.Errorf("%s has no CF units", p.ID)
		}
	}
}

// TestSpoolBound: a spool past its bound says so, for the export's 400.
func TestSpoolBound(t *testing.T) {
	sp, err := science.NewNetCDFSpool(t.TempDir(), []science.Station{{ID: s1}}, 64)
	if err != nil {
		t.Fatal(err)
	}
	defer sp.Close()
	var last error
	for i := range 20 {
		last = sp.Add(0, int64(i)*1000, 0, 1, 1)
		if last != nil {
			break
		}
	}
	if last != science.ErrTooLarge {
		t.Fatalf("20 readings in 64 bytes: %v, want ErrTooLarge", last)
	}
	_ = json.Valid
}
