package science_test

import (
	"io"
	"math"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/science"
	"github.com/sensorgate/sensorgate/pkg/canon"
)

// BenchmarkParquetChoices writes the same 1M NDBC-shaped measurement rows (20 sensors,
// 5 parameters every 10 minutes, values with a slow wave and noise) with each candidate
// codec and row group size, reporting rows/s, bytes per row and the heap in use at its
// highest (sampled every 64Ki rows): the figures docs/formats.md chose the defaults by.
// `make bench-parquet`.
func BenchmarkParquetChoices(b *testing.B) {
	const sensors, perSensor = 20, 10_000
	params := []struct {
		id, unit string
		base     float64
	}{{canon.WaterTemperatureC, "celsius", 20}, {canon.AirTemperatureC, "celsius", 15}, {canon.WindSpeedMS, "m/s", 6},
		{canon.AirPressureHPa, "hPa", 1013}, {canon.WaveHeightM, "m", 1.5}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, o := range []science.ParquetOptions{
		{Codec: "zstd", RowGroupRows: 128 << 10}, {Codec: "snappy", RowGroupRows: 128 << 10},
		{Codec: "zstd", RowGroupRows: 1 << 20}, {Codec: "snappy", RowGroupRows: 1 << 20},
	} {
		b.Run(o.Codec+"-"+strconv.Itoa(int(o.RowGroupRows>>10))+"Ki", func(b *testing.B) {
			var peak uint64
			var written int64
			var ms runtime.MemStats
			runtime.GC()
			b.ResetTimer()
			for range b.N {
				cw := &counter{}
				pw, err := science.NewParquet(cw, false, o)
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for s := range sensors {
					id := "0b6f4a44-1f0e-5b1e-9d7a-2f0c3a1b" + strconv.Itoa(1000+s)
					ext := strconv.Itoa(41000 + s)
					for i := range perSensor {
						ts := start.Add(time.Duration(i) * 10 * time.Minute)
						for k, p := range params {
							v := math.Round((p.base+math.Sin(float64(i)/144+float64(k))*p.base/10+float64((i*7+k*13)%10)/10)*10) / 10
							flag := int32(1)
							if (i+s)%997 == 0 {
								flag = 3
							}
							if err := pw.Row(science.Row{SensorID: id, ExternalID: ext, Timestamp: ts, Parameter: p.id, Value: v,
								Unit: p.unit, ValueOriginal: v, UnitOriginal: p.unit, QCFlag: flag}); err != nil {
								b.Fatal(err)
							}
							if n++; n%(64<<10) == 0 {
								runtime.ReadMemStats(&ms)
								peak = max(peak, ms.HeapInuse)
							}
						}
					}
				}
				if err := pw.Close(); err != nil {
					b.Fatal(err)
				}
				written += cw.n
			}
			rows := float64(sensors * perSensor * len(params) * b.N)
			b.ReportMetric(rows/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(written)/rows, "bytes/row")
			b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MB")
		})
	}
}

type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

var _ io.Writer = (*counter)(nil)
