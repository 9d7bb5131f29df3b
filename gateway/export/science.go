package export

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/science"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
)

// DefaultSpoolMax bounds the temporary file of one NetCDF export (docs/formats.md): the
// export's own bounds (366 days, 1,000 sensors) allow far more readings than a notebook
// wants in one classic file, so past this an export answers 400 naming format and
// suggests Parquet, which streams.
const DefaultSpoolMax = 4 << 30

// TrailerError is the trailer that says why a Parquet export stopped short (the status
// and part of the file are out; the file has no footer, so no reader takes it as whole).
const TrailerError = "X-Export-Error"

// parquet answers format=parquet: the services' CSV rows, typed and written as a Parquet
// file while they arrive (package science), so memory is one row group whatever the size.
func (o Options) parquet(c *gin.Context, ctx context.Context, runs []run, first *http.Response, q contract.ExportQuery) {
	hd := c.Writer.Header()
	formats.SetHeaders(hd, formats.Parquet, "export")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Export-Rows-Per-Request", strconv.Itoa(contract.ExportRowsPerRequest))
	hd.Set("Trailer", TrailerError)
	out := bufio.NewWriterSize(c.Writer, outBuffer)
	c.Status(http.StatusOK)
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetWriteDeadline(time.Now().Add(writeWindow))
	st := stream{o: o, c: c, out: out, format: formats.Parquet, flush: func() {
		_ = out.Flush()
		_ = rc.Flush()
		_ = rc.SetWriteDeadline(time.Now().Add(writeWindow))
	}}
	pw, err := science.NewParquet(out, q.Lineage, o.Parquet)
	if err == nil {
		err = o.eachRun(ctx, &st, runs, first, q, pw.CSVRecord)
	}
	if err == nil {
		err = pw.Close()
	}
	if err != nil {
		if !errors.Is(err, errStopped) || st.stopReason != "" {
			msg := st.stopReason
			if msg == "" {
				msg = fmt.Sprintf("export incomplete after %d rows: %v", st.rows, err)
			}
			o.Logger.WarnContext(c.Request.Context(), "parquet export cut short", "rows", st.rows, "err", err)
			// What is out stays a file without its footer, which readers refuse.
			hd.Set(TrailerError, msg)
		}
	}
	_ = out.Flush()
	_ = rc.Flush()
}

// netCDF answers format=netcdf: the rows are spooled first (a classic file's header
// states its sizes, science.NetCDFSpool), then the file goes out with its length. Any
// failure before the end, the budget's included, is still a clean error answer.
func (o Options) netCDF(c *gin.Context, ctx context.Context, runs []run, first *http.Response, q contract.ExportQuery, sensors []catalog.Sensor) {
	stations, services := netCDFStations(sensors)
	if len(stations) == 0 {
		// A classic file cannot have a station dimension of length 0 (0 marks the record
		// dimension): an export of no sensor with a feed is answered as such.
		o.Fail(c, apierr.New(apierr.NoReadings, "no sensor of the export's selection has readings; a NetCDF file needs at least one"))
		return
	}
	max := o.SpoolMax
	if max <= 0 {
		max = DefaultSpoolMax
	}
	sp, err := science.NewNetCDFSpool(o.SpoolDir, stations, max)
	if err != nil {
		if first != nil {
			first.Body.Close()
		}
		o.Fail(c, fmt.Errorf("netcdf export: %w", err))
		return
	}
	defer sp.Close()
	// Nothing goes to the client while spooling: the server's write deadline is moved on
	// as rows arrive, so a long spool is not cut off.
	rc := http.NewResponseController(c.Writer)
	_ = rc.SetWriteDeadline(time.Now().Add(writeWindow))
	st := stream{o: o, c: c, format: formats.NetCDF, flush: func() { _ = rc.SetWriteDeadline(time.Now().Add(writeWindow)) }}
	if err := o.eachRun(ctx, &st, runs, first, q, sp.CSVRecord); err != nil {
		switch {
		case errors.Is(err, science.ErrTooLarge):
			err = apierr.Invalid(formats.Param, "a NetCDF export holds at most %d MiB of readings and this one is larger: narrow since/until or the sensors, or use format=parquet, which streams", max>>20)
		case st.stopErr != nil:
			// The budget's refusal, saying where the export stopped (nothing was sent).
			err = st.stopErr
			var ae *apierr.Error
			if errors.As(err, &ae) {
				err = &apierr.Error{Code: ae.Code, Message: fmt.Sprintf("export stopped after %d rows: %s", st.rows, ae.Message)}
			}
		case c.Request.Context().Err() != nil:
			c.AbortWithStatus(499)
			return
		}
		o.Fail(c, err)
		return
	}
	now := o.Now().UTC()
	meta := science.Meta{
		Title: "sensorgate readings export",
		Summary: fmt.Sprintf("Readings of %d sensors from %s to %s in canonical units, with QARTOD quality flags; a CF discrete sampling geometry time series (indexed ragged array).",
			len(stations), contract.FormatTime(q.Since), contract.FormatTime(q.Until)),
		Source:  "sensorgate services: " + strings.Join(services, ", "),
		History: now.Format("2006-01-02T15:04:05Z") + " sensorgate GET " + c.Request.URL.Path + "?" + safeQuery(c.Request.URL.Query()),
		Created: now,
	}
	size, err := sp.Finish(meta)
	if err != nil {
		if errors.Is(err, science.ErrTooLarge) {
			err = apierr.Invalid(formats.Param, "a NetCDF export holds at most %d MiB of readings and this one is larger: narrow since/until or the sensors, or use format=parquet, which streams", max>>20)
		}
		o.Fail(c, err)
		return
	}
	hd := c.Writer.Header()
	formats.SetHeaders(hd, formats.NetCDF, "export")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Export-Rows-Per-Request", strconv.Itoa(contract.ExportRowsPerRequest))
	hd.Set("Content-Length", strconv.FormatInt(size, 10))
	c.Status(http.StatusOK)
	out := &deadlineWriter{w: c.Writer, rc: rc}
	if _, err := sp.WriteTo(out); err != nil && c.Request.Context().Err() == nil {
		o.Logger.WarnContext(c.Request.Context(), "netcdf export cut short", "err", err)
	}
}

// deadlineWriter moves the write deadline on as a spooled file goes out.
type deadlineWriter struct {
	w  io.Writer
	rc *http.ResponseController
	n  int
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if d.n += len(p); d.n >= 4<<20 {
		d.n = 0
		_ = d.rc.SetWriteDeadline(time.Now().Add(writeWindow))
	}
	return d.w.Write(p)
}

// safeQuery is the request's query for the history attribute, without credentials.
func safeQuery(v url.Values) string {
	v = maps.Clone(v)
	for _, k := range []string{"api_key", "key", "access_token", "token"} {
		v.Del(k)
	}
	return v.Encode()
}

// netCDFStations are the export's sensors that can have readings, in export order, and
// the services they come from.
func netCDFStations(sensors []catalog.Sensor) ([]science.Station, []string) {
	var out []science.Station
	var services []string
	for _, s := range sensors {
		if s.FeedID == nil || s.ServiceID == "" {
			continue
		}
		out = append(out, science.Station{ID: s.ID.String(), ExternalID: s.ExternalID, Name: s.Name, Latitude: s.Latitude, Longitude: s.Longitude})
		if !slices.Contains(services, s.ServiceID) {
			services = append(services, s.ServiceID)
		}
	}
	slices.SortFunc(out, func(a, b science.Station) int { return strings.Compare(a.ID, b.ID) })
	slices.Sort(services)
	return out, services
}

// eachRun reads the CSV rows of every run in export order and hands each to row.
func (o Options) eachRun(ctx context.Context, st *stream, runs []run, first *http.Response, q contract.ExportQuery, row func([]string) error) error {
	for i, r := range runs {
		resp := first
		if i > 0 {
			var err error
			if resp, err = o.open(ctx, r, q, st.format); err != nil {
				return err
			}
		}
		err := st.records(resp.Body, row)
		resp.Body.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// records reads one service's CSV export (no header) record by record, charging the
// budget per started block of rows as copy does; a refusal sets stopErr and ends with
// errStopped.
func (s *stream) records(body io.Reader, row func([]string) error) error {
	pending := 0
	err := contract.CSVRecords(body, func(rec []string) error {
		if s.rows > 0 && s.rows%contract.ExportRowsPerRequest == 0 {
			if cerr := s.o.Charge(s.c); cerr != nil {
				s.stopErr = cerr
				s.stopReason = fmt.Sprintf("export stopped after %d rows: %v", s.rows, cerr)
				var ae *apierr.Error
				if errors.As(cerr, &ae) {
					s.stopReason = fmt.Sprintf("%s: export stopped after %d rows: %s", ae.Code, s.rows, ae.Message)
				}
				return errStopped
			}
		}
		if err := row(rec); err != nil {
			return fmt.Errorf("row %d: %w", s.rows+1, err)
		}
		s.rows++
		if pending++; pending >= flushLines {
			s.flush()
			pending = 0
		}
		return nil
	})
	var failed *contract.ExportFailure
	switch {
	case err == nil || errors.Is(err, errStopped):
		return err
	case errors.As(err, &failed):
		s.o.Logger.WarnContext(s.c.Request.Context(), "export: a service failed mid-answer", "code", failed.Code, "msg", failed.Message)
		return apierr.New(apierr.UpstreamUnavailable, "export incomplete after %d rows: a backing service failed; retry", s.rows)
	case s.c.Request.Context().Err() != nil:
		return errStopped
	}
	return err
}
