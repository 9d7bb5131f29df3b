// Package science writes the science formats of docs/api-decisions.md "Science formats"
// (docs/formats.md): Parquet, one row per measurement with the readings CSV's columns
// typed (parquet-go), and NetCDF-CF discrete sampling geometry time series with QARTOD
// flag variables (pkg/netcdf). Both take the long-form CSV records that the services'
// export writes, so the gateway converts a stream it already reads row by row, and a
// readings page's decoded measurements.
package science

import (
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/zstd"

	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/formats"
)

// Row is one measurement: the readings CSV's columns (formats.ReadingHeader) with their
// types. Strings that repeat (ids, parameters, units) are dictionary-encoded, the
// timestamp is a UTC TIMESTAMP in ms.
type Row struct {
	SensorID      string    `parquet:"sensor_id,dict"`
	ExternalID    string    `parquet:"external_id,dict"`
	Timestamp     time.Time `parquet:"timestamp,timestamp(millisecond)"`
	Parameter     string    `parquet:"parameter,dict"`
	Value         float64   `parquet:"value"`
	Unit          string    `parquet:"unit,dict"`
	ValueOriginal float64   `parquet:"value_original"`
	UnitOriginal  string    `parquet:"unit_original,dict"`
	QCFlag        int32     `parquet:"qc_flag"`
}

// LineageRow is Row with each measurement's conversion (lineage=true,
// formats.LineageHeader).
type LineageRow struct {
	SensorID          string    `parquet:"sensor_id,dict"`
	ExternalID        string    `parquet:"external_id,dict"`
	Timestamp         time.Time `parquet:"timestamp,timestamp(millisecond)"`
	Parameter         string    `parquet:"parameter,dict"`
	Value             float64   `parquet:"value"`
	Unit              string    `parquet:"unit,dict"`
	ValueOriginal     float64   `parquet:"value_original"`
	UnitOriginal      string    `parquet:"unit_original,dict"`
	QCFlag            int32     `parquet:"qc_flag"`
	ConversionRule    string    `parquet:"conversion_rule,dict"`
	ConversionFormula string    `parquet:"conversion_formula,dict"`
	SourceField       string    `parquet:"source_field,dict"`
	SourceValue       *float64  `parquet:"source_value,optional"`
	SourceUnit        string    `parquet:"source_unit,dict"`
}

// ParquetOptions choose the file's compression and row group size; the zero value is
// the default (DefaultCodec, DefaultRowGroupRows), chosen by measurement (docs/formats.md).
type ParquetOptions struct {
	// Codec is "zstd" or "snappy".
	Codec string
	// RowGroupRows bounds a row group: the writer holds one row group's pages in memory
	// until it is complete, so this bounds its memory whatever the export's size.
	RowGroupRows int64
}

// Defaults of ParquetOptions (docs/formats.md "Parquet: compression and row groups").
const (
	DefaultCodec        = "zstd"
	DefaultRowGroupRows = 128 << 10
)

// The codecs are shared by every file: each keeps a pool of its encoders, so that an
// export reuses the compressor state of the last one instead of allocating its own.
var (
	zstdCodec   = &zstd.Codec{Level: zstd.SpeedDefault}
	snappyCodec = &snappy.Codec{}
)

// batchRows is how many rows are handed to the Parquet writer at once.
const batchRows = 1024

// ParquetWriter writes a Parquet file of readings rows as they come; Close writes the
// footer. A file whose writing stopped short has no footer, so that no reader takes it
// for a whole one.
type ParquetWriter struct {
	lineage bool
	w       *parquet.GenericWriter[Row]
	lw      *parquet.GenericWriter[LineageRow]
	buf     []Row
	lbuf    []LineageRow
	rows    int64
}

// NewParquet starts a Parquet file on out; lineage adds the conversion columns.
func NewParquet(out io.Writer, lineage bool, o ParquetOptions) (*ParquetWriter, error) {
	var codec compress.Codec
	switch o.Codec {
	case "", "zstd":
		codec = zstdCodec
	case "snappy":
		codec = snappyCodec
	default:
		return nil, fmt.Errorf("parquet: unknown codec %q", o.Codec)
	}
	if o.RowGroupRows <= 0 {
		o.RowGroupRows = DefaultRowGroupRows
	}
	opts := []parquet.WriterOption{
		parquet.Compression(codec),
		parquet.MaxRowsPerRowGroup(o.RowGroupRows),
		parquet.CreatedBy("sensorgate", "1", ""),
	}
	p := &ParquetWriter{lineage: lineage}
	if lineage {
		p.lw = parquet.NewGenericWriter[LineageRow](out, opts...)
		p.lbuf = make([]LineageRow, 0, batchRows)
	} else {
		p.w = parquet.NewGenericWriter[Row](out, opts...)
		p.buf = make([]Row, 0, batchRows)
	}
	return p, nil
}

// Rows is the number of rows written so far.
func (p *ParquetWriter) Rows() int64 { return p.rows }

// Row adds one measurement row.
func (p *ParquetWriter) Row(r Row) error {
	if p.lineage {
		return p.LineageRow(LineageRow{SensorID: r.SensorID, ExternalID: r.ExternalID, Timestamp: r.Timestamp, Parameter: r.Parameter,
			Value: r.Value, Unit: r.Unit, ValueOriginal: r.ValueOriginal, UnitOriginal: r.UnitOriginal, QCFlag: r.QCFlag})
	}
	p.buf = append(p.buf, r)
	p.rows++
	if len(p.buf) == cap(p.buf) {
		return p.flushRows()
	}
	return nil
}

// LineageRow adds one measurement row with its conversion (a writer made with lineage).
func (p *ParquetWriter) LineageRow(r LineageRow) error {
	if !p.lineage {
		return fmt.Errorf("parquet: a lineage row in a file without lineage columns")
	}
	p.lbuf = append(p.lbuf, r)
	p.rows++
	if len(p.lbuf) == cap(p.lbuf) {
		return p.flushRows()
	}
	return nil
}

func (p *ParquetWriter) flushRows() error {
	var err error
	if p.lineage {
		_, err = p.lw.Write(p.lbuf)
		p.lbuf = p.lbuf[:0]
	} else {
		_, err = p.w.Write(p.buf)
		p.buf = p.buf[:0]
	}
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}

// Reading adds the rows of one decoded reading (a readings page's), conv the conversion
// of each measurement when the file has lineage columns.
func (p *ParquetWriter) Reading(sensorID, externalID string, ts time.Time, ms []canon.Measurement, conv []canon.Conversion) error {
	for i, m := range ms {
		r := Row{SensorID: sensorID, ExternalID: externalID, Timestamp: ts.UTC(), Parameter: m.Parameter, Value: m.Value,
			Unit: m.Unit, ValueOriginal: m.ValueOriginal, UnitOriginal: m.UnitOriginal, QCFlag: int32(m.Quality().Flag)}
		if !p.lineage {
			if err := p.Row(r); err != nil {
				return err
			}
			continue
		}
		lr := LineageRow{SensorID: r.SensorID, ExternalID: r.ExternalID, Timestamp: r.Timestamp, Parameter: r.Parameter,
			Value: r.Value, Unit: r.Unit, ValueOriginal: r.ValueOriginal, UnitOriginal: r.UnitOriginal, QCFlag: r.QCFlag}
		if i < len(conv) {
			c := conv[i]
			sv := c.SourceValue
			lr.ConversionRule, lr.ConversionFormula, lr.SourceField, lr.SourceValue, lr.SourceUnit = c.Rule, c.Formula, c.SourceField, &sv, c.SourceUnit
		}
		if err := p.LineageRow(lr); err != nil {
			return err
		}
	}
	return nil
}

// CSVRecord adds one long-form CSV record (formats.ReadingHeader, or LineageHeader for a
// writer with lineage), as the services' export writes them.
func (p *ParquetWriter) CSVRecord(rec []string) error {
	want := len(formats.ReadingHeader)
	if p.lineage {
		want = len(formats.LineageHeader)
	}
	if len(rec) != want {
		return fmt.Errorf("a row of %d fields, want %d", len(rec), want)
	}
	r, err := ParseRow(rec)
	if err != nil {
		return err
	}
	if !p.lineage {
		return p.Row(r)
	}
	lr := LineageRow{SensorID: r.SensorID, ExternalID: r.ExternalID, Timestamp: r.Timestamp, Parameter: r.Parameter,
		Value: r.Value, Unit: r.Unit, ValueOriginal: r.ValueOriginal, UnitOriginal: r.UnitOriginal, QCFlag: r.QCFlag,
		ConversionRule: rec[9], ConversionFormula: rec[10], SourceField: rec[11], SourceUnit: rec[13]}
	if rec[12] != "" {
		v, err := strconv.ParseFloat(rec[12], 64)
		if err != nil {
			return fmt.Errorf("source_value %q: %w", rec[12], err)
		}
		lr.SourceValue = &v
	}
	return p.LineageRow(lr)
}

// ParseRow reads the first nine fields of a long-form CSV record into a Row.
func ParseRow(rec []string) (Row, error) {
	ts, err := time.Parse(time.RFC3339, rec[2])
	if err != nil {
		return Row{}, fmt.Errorf("timestamp %q: %w", rec[2], err)
	}
	v, err := parseFloat(rec[4])
	if err != nil {
		return Row{}, fmt.Errorf("value %q: %w", rec[4], err)
	}
	vo, err := parseFloat(rec[6])
	if err != nil {
		return Row{}, fmt.Errorf("value_original %q: %w", rec[6], err)
	}
	flag, err := strconv.Atoi(rec[8])
	if err != nil || flag < 0 || flag > math.MaxInt8 {
		return Row{}, fmt.Errorf("qc_flag %q is not a QARTOD code", rec[8])
	}
	return Row{SensorID: rec[0], ExternalID: rec[1], Timestamp: ts.UTC(), Parameter: rec[3], Value: v, Unit: rec[5],
		ValueOriginal: vo, UnitOriginal: rec[7], QCFlag: int32(flag)}, nil
}

// parseFloat reads a CSV number; an empty field (a value the source did not give) is NaN.
func parseFloat(s string) (float64, error) {
	if s == "" {
		return math.NaN(), nil
	}
	return strconv.ParseFloat(s, 64)
}

// Close writes the rows still buffered and the file's footer.
func (p *ParquetWriter) Close() error {
	if err := p.flushRows(); err != nil {
		return err
	}
	var err error
	if p.lineage {
		err = p.lw.Close()
	} else {
		err = p.w.Close()
	}
	if err != nil {
		return fmt.Errorf("parquet: %w", err)
	}
	return nil
}
