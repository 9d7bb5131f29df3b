package netcdf_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/netcdf"
)

// ncdump runs Debian's ncdump (netcdf-bin, the netCDF-C library's own reader) on the
// file, or skips when it is not installed (scripts/prereqs.sh installs it).
func ncdump(t *testing.T, path string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("ncdump")
	if err != nil {
		t.Skip("ncdump is not installed (Debian netcdf-bin; scripts/prereqs.sh installs it)")
	}
	out, err := exec.Command(bin, append(args, path)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ncdump %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func write(t *testing.T, h *netcdf.Header, fill func(w *netcdf.Writer) error) string {
	t.Helper()
	var buf bytes.Buffer
	w, err := netcdf.NewWriter(&buf, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := fill(w); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	size, err := h.Size()
	if err != nil || size != int64(buf.Len()) {
		t.Fatalf("Size() = %d, %v; wrote %d bytes", size, err, buf.Len())
	}
	path := filepath.Join(t.TempDir(), "f.nc")
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// norm drops the blank space ncdump lays its output out with, so that the comparison is
// of what it read.
func norm(s string) string { return strings.Join(strings.Fields(s), " ") }

// TestNcdumpReadsWhatWasWritten writes a file with every classic type, attributes of
// every kind, fixed variables (text, integers, doubles) and record variables of
// different sizes (padded within a record), and checks ncdump's whole CDL against it:
// the netCDF-C library reads back every name, attribute, dimension and value.
func TestNcdumpReadsWhatWasWritten(t *testing.T) {
	h := &netcdf.Header{
		Dims: []netcdf.Dim{{Name: "obs", Len: 0}, {Name: "station", Len: 2}, {Name: "id_strlen", Len: 5}},
		Attrs: []netcdf.Attr{
			{Name: "Conventions", Value: "CF-1.8"},
			{Name: "title", Value: "a test: µ, ü"},
			{Name: "answer", Value: int32(42)},
		},
		Vars: []netcdf.Var{
			{Name: "station_id", Type: netcdf.Char, Dims: []string{"station", "id_strlen"}, Attrs: []netcdf.Attr{{Name: "cf_role", Value: "timeseries_id"}}},
			{Name: "lat", Type: netcdf.Double, Dims: []string{"station"}, Attrs: []netcdf.Attr{{Name: "units", Value: "degrees_north"}}},
			{Name: "level", Type: netcdf.Short, Dims: []string{"station"}},
			{Name: "station_index", Type: netcdf.Int, Dims: []string{"obs"}, Attrs: []netcdf.Attr{{Name: "instance_dimension", Value: "station"}}},
			{Name: "time", Type: netcdf.Double, Dims: []string{"obs"}},
			{Name: "t", Type: netcdf.Float, Dims: []string{"obs"}, Attrs: []netcdf.Attr{{Name: "_FillValue", Value: float32(-999)}}},
			{Name: "t_qc", Type: netcdf.Byte, Dims: []string{"obs"}, Attrs: []netcdf.Attr{
				{Name: "flag_values", Value: []int8{1, 2, 3, 4, 9}},
				{Name: "flag_meanings", Value: "pass not_evaluated suspect fail missing"},
			}},
		},
		NumRecs: 3,
	}
	path := write(t, h, func(w *netcdf.Writer) error {
		if err := w.Fixed("station_id", "abcdeXY"); err != nil {
			return err
		}
		if err := w.Fixed("lat", []float64{41.5, -12.25}); err != nil {
			return err
		}
		if err := w.Fixed("level", []int16{-3, 7}); err != nil {
			return err
		}
		r := w.NewRecord()
		for i, v := range []struct {
			st   int32
			time float64
			t    float32
			qc   int8
		}{{0, 1.7e9, 12.5, 1}, {0, 1.7e9 + 600, -999, 9}, {1, 1.7e9 + 0.125, 99.75, 4}} {
			r.SetInt(0, v.st)
			r.SetDouble(1, v.time)
			r.SetFloat(2, v.t)
			r.SetByte(3, v.qc)
			if err := w.Record(r); err != nil {
				return err
			}
			_ = i
		}
		return nil
	})
	got := ncdump(t, path, "-p", "9,17")
	want := `netcdf f {
dimensions:
	obs = UNLIMITED ; // (3 currently)
	station = 2 ;
	id_strlen = 5 ;
variables:
	char station_id(station, id_strlen) ;
		station_id:cf_role = "timeseries_id" ;
	double lat(station) ;
		lat:units = "degrees_north" ;
	short level(station) ;
	int station_index(obs) ;
		station_index:instance_dimension = "station" ;
	double time(obs) ;
	float t(obs) ;
		t:_FillValue = -999.f ;
	byte t_qc(obs) ;
		t_qc:flag_values = 1b, 2b, 3b, 4b, 9b ;
		t_qc:flag_meanings = "pass not_evaluated suspect fail missing" ;

// global attributes:
		:Conventions = "CF-1.8" ;
		:title = "a test: µ, ü" ;
		:answer = 42 ;
data:

 station_id =
  "abcde",
  "XY" ;

 lat = 41.5, -12.25 ;

 level = -3, 7 ;

 station_index = 0, 0, 1 ;

 time = 1700000000, 1700000600, 1700000000.125 ;

 t = 12.5, _, 99.75 ;

 t_qc = 1, 9, 4 ;
}
`
	if norm(got) != norm(want) {
		t.Errorf("ncdump:\n%s\nwant:\n%s", got, want)
	}
	// The file's format as the library sees it: 64-bit offset.
	if k := ncdump(t, path, "-k"); strings.TrimSpace(k) != "64-bit offset" {
		t.Errorf("ncdump -k = %q, want 64-bit offset", k)
	}
}

// TestOneRecordVariableAndNoRecords covers the format's special case (a lone record
// variable is not padded to 4 bytes per record) and a file with no records.
func TestOneRecordVariableAndNoRecords(t *testing.T) {
	h := &netcdf.Header{
		Dims:    []netcdf.Dim{{Name: "obs", Len: 0}},
		Vars:    []netcdf.Var{{Name: "flag", Type: netcdf.Byte, Dims: []string{"obs"}}},
		NumRecs: 5,
	}
	path := write(t, h, func(w *netcdf.Writer) error {
		r := w.NewRecord()
		for _, v := range []int8{1, 2, 3, 4, 9} {
			r.SetByte(0, v)
			if err := w.Record(r); err != nil {
				return err
			}
		}
		return nil
	})
	if got := ncdump(t, path); !strings.Contains(norm(got), "flag = 1, 2, 3, 4, 9 ;") {
		t.Errorf("ncdump:\n%s", got)
	}
	empty := &netcdf.Header{
		Dims: []netcdf.Dim{{Name: "obs", Len: 0}, {Name: "station", Len: 1}},
		Vars: []netcdf.Var{{Name: "lon", Type: netcdf.Double, Dims: []string{"station"}},
			{Name: "time", Type: netcdf.Double, Dims: []string{"obs"}}, {Name: "v", Type: netcdf.Double, Dims: []string{"obs"}}},
	}
	path = write(t, empty, func(w *netcdf.Writer) error { return w.Fixed("lon", []float64{-70.5}) })
	if got := norm(ncdump(t, path)); !strings.Contains(got, "obs = UNLIMITED ; // (0 currently)") || !strings.Contains(got, "lon = -70.5 ;") {
		t.Errorf("ncdump:\n%s", got)
	}
}

// TestWriterRefusesWhatWouldBreakTheFile: every misuse is an error, not a corrupt file.
func TestWriterRefusesWhatWouldBreakTheFile(t *testing.T) {
	bad := []struct {
		name string
		h    netcdf.Header
	}{
		{"two record dims", netcdf.Header{Dims: []netcdf.Dim{{Name: "a"}, {Name: "b"}}}},
		{"unknown dim", netcdf.Header{Vars: []netcdf.Var{{Name: "v", Type: netcdf.Int, Dims: []string{"nope"}}}}},
		{"record dim not first", netcdf.Header{Dims: []netcdf.Dim{{Name: "r"}, {Name: "x", Len: 2}},
			Vars: []netcdf.Var{{Name: "v", Type: netcdf.Int, Dims: []string{"x", "r"}}}}},
		{"bad name", netcdf.Header{Dims: []netcdf.Dim{{Name: "a/b", Len: 1}}}},
		{"bad attribute", netcdf.Header{Attrs: []netcdf.Attr{{Name: "x", Value: []string{"no"}}}}},
		{"duplicate variable", netcdf.Header{Vars: []netcdf.Var{{Name: "v", Type: netcdf.Int}, {Name: "v", Type: netcdf.Int}}}},
	}
	for _, b := range bad {
		if _, err := netcdf.NewWriter(&bytes.Buffer{}, &b.h); err == nil {
			t.Errorf("%s: no error", b.name)
		}
	}
	h := &netcdf.Header{
		Dims:    []netcdf.Dim{{Name: "obs"}, {Name: "s", Len: 2}},
		Vars:    []netcdf.Var{{Name: "x", Type: netcdf.Double, Dims: []string{"s"}}, {Name: "t", Type: netcdf.Double, Dims: []string{"obs"}}},
		NumRecs: 1,
	}
	w, err := netcdf.NewWriter(&bytes.Buffer{}, h)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Record(w.NewRecord()); err == nil {
		t.Error("a record before the fixed variables: no error")
	}
	if err := w.Fixed("x", []float64{1}); err == nil {
		t.Error("too few values: no error")
	}
	if err := w.Fixed("x", []int32{1, 2}); err == nil {
		t.Error("values of the wrong type: no error")
	}
	if err := w.Fixed("x", []float64{1, 2}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err == nil {
		t.Error("Close with a record missing: no error")
	}
	r := w.NewRecord()
	if err := w.Record(r); err != nil {
		t.Fatal(err)
	}
	if err := w.Record(r); err == nil {
		t.Error("a record more than announced: no error")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}
