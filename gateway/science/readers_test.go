package science_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// duckRead reads a Parquet file with DuckDB (@duckdb/node-api, scripts/parquet-read).
type duckRead struct {
	Schema []struct{ Name, Type string } `json:"schema"`
	Rows   []map[string]any              `json:"rows"`
	Meta   struct {
		RowGroups   int    `json:"row_groups"`
		MaxRows     int    `json:"max_rows"`
		Compression string `json:"compression"`
	} `json:"meta"`
}

func readParquet(t *testing.T, file string) duckRead {
	t.Helper()
	dir := testenv.Node(t, testenv.NodePackage{Dir: filepath.Join("..", "..", "scripts", "parquet-read"), Files: []string{"read.mjs"},
		Needs: "the Parquet tests read files back with DuckDB (@duckdb/node-api) and need Node.js 20+ and npm"})
	out, errOut, err := testenv.RunIn(dir, 2*time.Minute, nil, "node", "read.mjs", file)
	if err != nil {
		t.Fatalf("duckdb read: %v\n%s", err, errOut)
	}
	var r duckRead
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("duckdb read: %v\n%.500s", err, out)
	}
	return r
}

// ncRead is what netCDF4-python, xarray and pandas read of a NetCDF file
// (scripts/netcdf-read/read.py).
type ncRead struct {
	FileFormat string                    `json:"file_format"`
	Global     map[string]any            `json:"global"`
	Dims       map[string]int            `json:"dims"`
	Unlimited  []string                  `json:"unlimited"`
	Vars       map[string]ncVar          `json:"vars"`
	StationID  []string                  `json:"station_id"`
	ExternalID []string                  `json:"external_id"`
	TimeDtype  string                    `json:"time_dtype"`
	PandasTime string                    `json:"pandas_time_dtype"`
	Obs        map[string][]*json.Number `json:"obs"`
	PandasRows int                       `json:"pandas_rows"`
}

type ncVar struct {
	Dtype string         `json:"dtype"`
	Dims  []string       `json:"dims"`
	Attrs map[string]any `json:"attrs"`
}

const python3 = "/usr/bin/python3" // Debian's, whose python3-netcdf4 and python3-xarray the tests use

func readNetCDF(t *testing.T, file string) ncRead {
	t.Helper()
	if _, err := os.Stat(python3); err != nil {
		t.Skip("no /usr/bin/python3 (Debian python3 with python3-netcdf4, python3-xarray, python3-pandas; scripts/prereqs.sh installs them)")
	}
	if out, err := exec.Command(python3, "-c", "import netCDF4, xarray, pandas").CombinedOutput(); err != nil {
		t.Skipf("python3-netcdf4, python3-xarray or python3-pandas missing (scripts/prereqs.sh installs them): %s", out)
	}
	script, _ := filepath.Abs(filepath.Join("..", "..", "scripts", "netcdf-read", "read.py"))
	cmd := exec.Command(python3, script, file)
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("netcdf read: %v\n%s", err, stderr)
	}
	var r ncRead
	dec := json.NewDecoder(bytesReader(out))
	dec.UseNumber()
	if err := dec.Decode(&r); err != nil {
		t.Fatalf("netcdf read: %v\n%.500s", err, out)
	}
	return r
}

// ncdumpHeader is `ncdump -h` of a file (Debian netcdf-bin).
func ncdumpHeader(t *testing.T, file string) string {
	t.Helper()
	bin, err := exec.LookPath("ncdump")
	if err != nil {
		t.Skip("ncdump is not installed (Debian netcdf-bin; scripts/prereqs.sh installs it)")
	}
	out, err := exec.Command(bin, "-h", file).CombinedOutput()
	if err != nil {
		t.Fatalf("ncdump -h: %v\n%s", err, out)
	}
	return string(out)
}
