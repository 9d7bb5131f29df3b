// Package export answers GET /api/v1/readings/export (docs/api-decisions.md "Wave 2"):
// every reading of up to 1000 sensors over up to 366 days, as CSV or NDJSON, ordered by
// sensor id then time, streamed from the sensors' services (each reads its store a chunk
// at a time) through the gateway line by line, so neither holds the answer; gzip-encoded
// by the gateway's compression middleware when the client accepts it.
//
// Cost: the request itself counts one request against the key's budget, and one more
// request is taken before row 10,001, 20,001, and so on (one per started 10,000 rows, see
// contract.ExportRowsPerRequest): an export cannot move more rows than the same budget
// spent on readings pages of 500 would, up to twentyfold fewer calls. When the budget
// runs out mid-stream the answer ends with a final line saying so (NDJSON: an error
// object; CSV: a row whose first field starts with "# rate_limited:"), and nothing after it.
package export

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/readings"
	"github.com/sensorgate/sensorgate/gateway/science"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/formats"
)

// Options configure the handler.
type Options struct {
	Select sensorquery.SelectFunc
	// Services are the clients of the services, by id.
	Services map[string]*contract.Client
	// Charge takes one more request from the caller's budget: nil when granted, else the
	// error refusing it (429 rate_limited, 503 rate_limit_unavailable).
	Charge func(c *gin.Context) error
	Fail   readings.ErrorFunc
	Logger *slog.Logger
	Now    func() time.Time
	// Parquet chooses format=parquet's compression and row group size (zero: the
	// defaults of package science).
	Parquet science.ParquetOptions
	// SpoolDir holds format=netcdf's temporary files (empty: the system's), at most
	// SpoolMax bytes each (0: DefaultSpoolMax).
	SpoolDir string
	SpoolMax int64
}

// flushLines is how many lines pass between flushes when the service keeps sending.
const flushLines = 2000

// outBuffer is the size of the buffer lines are gathered in before they are written to
// the response.
const outBuffer = 64 << 10

// writeWindow is how long the client has to take what was flushed (the server's write
// deadline is made for single pages and is moved forward at every flush).
const writeWindow = time.Minute

// Handler returns the export handler.
func Handler(o Options) gin.HandlerFunc {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return func(c *gin.Context) {
		v := c.Request.URL.Query()
		f, err := formats.Negotiate(v, c.GetHeader("Accept"), formats.CSV, formats.NDJSON, formats.Parquet, formats.NetCDF)
		if err != nil {
			o.Fail(c, err)
			return
		}
		q, err := contract.ParseExportQuery(v, o.Now())
		if err != nil {
			o.Fail(c, err)
			return
		}
		if f == formats.NetCDF && q.Lineage {
			o.Fail(c, apierr.Invalid("lineage", "lineage=true needs format csv, ndjson or parquet (a NetCDF variable holds values, not their conversions)"))
			return
		}
		sensors, err := o.Select(c, v)
		if err != nil {
			o.Fail(c, err)
			return
		}
		runs := plan(sensors)
		ctx, cancel := context.WithCancel(c.Request.Context())
		defer cancel()
		// The first service is called before the status goes out, so that its refusal is
		// still a clean error answer.
		var first *http.Response
		if len(runs) > 0 {
			if first, err = o.open(ctx, runs[0], q, f); err != nil {
				o.Fail(c, err)
				return
			}
		}
		switch f {
		case formats.Parquet:
			o.parquet(c, ctx, runs, first, q)
			return
		case formats.NetCDF:
			o.netCDF(c, ctx, runs, first, q, sensors)
			return
		}
		hd := c.Writer.Header()
		formats.SetHeaders(hd, f, "export")
		hd.Set("Cache-Control", "no-store")
		hd.Set("X-Export-Rows-Per-Request", strconv.Itoa(contract.ExportRowsPerRequest))
		// gzip, when the client accepts it, is the gateway's compression middleware's
		// (it flushes with the handler). Lines are gathered in a buffer of outBuffer
		// bytes first: written one by one they went through the response's 2 KiB buffer
		// and the connection's 4 KiB one, a write call every few lines.
		out := bufio.NewWriterSize(c.Writer, outBuffer)
		c.Status(http.StatusOK)
		rc := http.NewResponseController(c.Writer)
		_ = rc.SetWriteDeadline(time.Now().Add(writeWindow))
		flush := func() {
			_ = out.Flush()
			_ = rc.Flush()
			_ = rc.SetWriteDeadline(time.Now().Add(writeWindow))
		}
		st := stream{o: o, c: c, out: out, flush: flush, format: f, header: formats.ReadingHeader}
		if q.Lineage {
			st.header = formats.LineageHeader
		}
		if f == formats.CSV {
			st.line(strings.Join(st.header, ",") + "\n")
		}
		for i, r := range runs {
			resp := first
			if i > 0 {
				if resp, err = o.open(ctx, r, q, f); err != nil {
					st.end(err)
					break
				}
			}
			err := st.copy(resp.Body)
			resp.Body.Close()
			if err != nil {
				st.end(err)
				break
			}
		}
		_ = out.Flush()
		_ = rc.Flush()
	}
}

// run is consecutive sensors of one service, in export order.
type run struct {
	service string
	ids     []string // external ids
}

// plan orders the sensors by id (the export order) and cuts them into runs of one
// service, one service call each. Sensors without a feed have no readings.
func plan(sensors []catalog.Sensor) []run {
	sensors = slices.Clone(sensors)
	slices.SortFunc(sensors, func(a, b catalog.Sensor) int { return cmp.Compare(a.ID.String(), b.ID.String()) })
	var out []run
	for _, s := range sensors {
		if s.FeedID == nil || s.ServiceID == "" {
			continue
		}
		if len(out) == 0 || out[len(out)-1].service != s.ServiceID {
			out = append(out, run{service: s.ServiceID})
		}
		out[len(out)-1].ids = append(out[len(out)-1].ids, s.ExternalID)
	}
	return out
}

// open starts the export of one run of sensors from their service.
func (o Options) open(ctx context.Context, r run, q contract.ExportQuery, f string) (*http.Response, error) {
	c, ok := o.Services[r.service]
	if !ok {
		return nil, apierr.New(apierr.UpstreamUnavailable, "service %q is not configured on this gateway", r.service)
	}
	if f == formats.Parquet || f == formats.NetCDF {
		f = formats.CSV // the rows the science formats are written from (package science)
	}
	return c.Export(ctx, contract.ExportValues(r.ids, q, f, false))
}

// stream passes lines to the client, charging the budget per started block of rows.
type stream struct {
	o      Options
	c      *gin.Context
	out    io.Writer
	flush  func()
	format string
	// header is the CSV header row: formats.ReadingHeader, or LineageHeader with lineage=true.
	header []string
	rows   int
	failed bool
	// stopErr is the budget's refusal that stopped a science-format export, stopReason
	// its message.
	stopErr    error
	stopReason string
}

func (s *stream) line(l string) { _, _ = io.WriteString(s.out, l) }

// copy passes the lines of one service's answer on. Before a row that starts a new block
// of contract.ExportRowsPerRequest rows, one more request is charged; a refusal ends the
// export with its final line.
func (s *stream) copy(body io.Reader) error {
	br := bufio.NewReaderSize(body, 64<<10)
	pending := 0
	for {
		l, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer (a huge raw fragment): gather it whole.
			rest, err2 := br.ReadBytes('\n')
			l, err = append(append([]byte(nil), l...), rest...), err2
		}
		if len(l) > 0 {
			if l[len(l)-1] != '\n' {
				// The service's answer ended inside a line: it failed.
				return fmt.Errorf("the service's answer ended mid-row after %d rows", s.rows)
			}
			if s.rows > 0 && s.rows%contract.ExportRowsPerRequest == 0 {
				if cerr := s.o.Charge(s.c); cerr != nil {
					s.budget(cerr)
					return errStopped
				}
			}
			if _, werr := s.out.Write(l); werr != nil {
				return errStopped // the client is gone
			}
			s.rows++
			pending++
			if pending >= flushLines || br.Buffered() == 0 {
				s.flush()
				pending = 0
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if s.c.Request.Context().Err() != nil {
				return errStopped
			}
			return fmt.Errorf("reading the service's answer after %d rows: %w", s.rows, err)
		}
	}
}

// errStopped ends an export that has already said why (or whose client is gone).
var errStopped = errors.New("export stopped")

// budget writes the final line of an export whose budget ran out.
func (s *stream) budget(err error) {
	msg := fmt.Sprintf("export stopped after %d rows: %v", s.rows, err)
	code := apierr.RateLimited
	var ae *apierr.Error
	if errors.As(err, &ae) {
		msg, code = fmt.Sprintf("export stopped after %d rows: %s", s.rows, ae.Message), ae.Code
	}
	s.final(msg, code)
}

// end writes the final line of an export that a service failure cut short.
func (s *stream) end(err error) {
	if errors.Is(err, errStopped) || s.c.Request.Context().Err() != nil {
		return
	}
	s.o.Logger.WarnContext(s.c.Request.Context(), "export cut short", "rows", s.rows, "err", err)
	msg := fmt.Sprintf("export incomplete after %d rows: a backing service failed; retry from the last timestamp received", s.rows)
	code := apierr.UpstreamUnavailable
	var ae *apierr.Error
	if errors.As(err, &ae) {
		code = ae.Code
	}
	s.final(msg, code)
}

func (s *stream) final(msg, code string) {
	if s.format == formats.CSV {
		// A record as wide as the others (CSV readers insist), its first field saying why.
		rec := make([]string, len(s.header))
		rec[0] = "# " + code + ": " + msg
		c := formats.NewCSVNoHeader(s.out)
		_ = c.Row(rec)
		_ = c.Flush()
	} else {
		b, _ := json.Marshal(struct {
			Error string `json:"error"`
			Code  string `json:"code"`
			Rows  int    `json:"rows"`
		}{msg, code, s.rows})
		s.line(string(b) + "\n")
	}
	s.flush()
}
