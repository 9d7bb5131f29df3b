package httpapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/canon"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/runtime/live"
	"github.com/sensorgate/sensorgate/services/runtime/store"
)

// ReadingJSON encodes r as an item of a readings page (every parameter, normalized form),
// the data of a stream event: the same bytes a readings page holds for it.
func ReadingJSON(st contract.Station, r store.Reading) ([]byte, error) {
	var buf bytes.Buffer
	if err := appendReading(&buf, st, r, contract.ReadingsQuery{}); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// maxLatestBody bounds the body of a batched latest call: 5,000 ids of 128 bytes, quoted.
const maxLatestBody = contract.MaxLatestBatch*(contract.MaxExternalIDLen+8) + 1024

// latestBatch serves POST /v1/readings/latest: the newest reading of each station named,
// in one store query (docs/live.md).
func (s *Server) latestBatch() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var req contract.LatestBatchRequest
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxLatestBody))
		if err != nil {
			s.fail(w, r, apierr.New(apierr.PayloadTooLarge, "the body is larger than %d bytes", maxLatestBody))
			return
		}
		if err := json.Unmarshal(body, &req); err != nil {
			s.fail(w, r, apierr.Invalid("external_ids", "want a JSON body {\"external_ids\": [...]}: %v", err))
			return
		}
		if len(req.ExternalIDs) > contract.MaxLatestBatch {
			s.fail(w, r, apierr.Invalid("external_ids", "at most %d ids per call, got %d", contract.MaxLatestBatch, len(req.ExternalIDs)))
			return
		}
		ids := req.ExternalIDs[:0:0]
		for _, id := range req.ExternalIDs {
			if contract.ValidExternalID(id) == nil {
				ids = append(ids, id) // an id that cannot exist is simply not found
			}
		}
		qc, err := contract.ParseQC(url.Values{"qc": {req.QC}}, contract.QCAll)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		rows, err := s.d.Store.LatestReadings(r.Context(), ids)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		out := contract.LatestBatchResponse{ServiceID: s.d.Meta.ID, ServerTime: contract.Time{Time: s.d.Now()},
			Items: make([]contract.LatestItem, 0, len(rows))}
		for _, row := range rows {
			it := contract.LatestItem{ExternalID: row.Station.ExternalID, ReportingIntervalS: row.Station.ReportingIntervalS,
				Measurements: json.RawMessage("[]")}
			if rd := row.Reading; rd != nil {
				it.Timestamp = &contract.Time{Time: rd.Time}
				it.FetchedAt = &contract.Time{Time: rd.FetchedAt}
				if len(rd.Measurements) > 0 {
					if it.Measurements, err = keepQualityJSON(rd.Measurements, qc); err != nil {
						s.fail(w, r, fmt.Errorf("latest of %s: %w", row.Station.ExternalID, err))
						return
					}
				}
			}
			out.Items = append(out.Items, it)
		}
		// Written directly: json.Marshal re-validated and compacted every item's
		// measurements, a third of the handler (docs/live.md, "Area latest").
		b, err := contract.AppendLatestBatch(make([]byte, 0, latestBatchSize(out.Items)), &out)
		if err != nil {
			apierr.Write(w, fmt.Errorf("encode response: %w", err))
			return
		}
		writeBytes(w, http.StatusOK, b)
	}
}

// latestBatchSize estimates the JSON size of a batched latest answer, so that its buffer
// is allocated once.
func latestBatchSize(items []contract.LatestItem) int {
	n := 128
	for i := range items {
		n += 160 + len(items[i].ExternalID) + len(items[i].Measurements)
	}
	return n
}

// events serves GET /v1/events?after=&limit=&wait=: the service's log of stored readings
// after a position, the long poll each gateway follows (docs/live.md).
func (s *Server) events() http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.d.Events == nil {
			s.fail(w, r, apierr.New(apierr.NotFound, "service %s keeps no event log", s.d.Meta.ID))
			return
		}
		v := r.URL.Query()
		var after *contract.Position
		if a := strings.TrimSpace(v.Get("after")); a != "" {
			p, err := contract.ParsePosition(a)
			if err != nil {
				s.fail(w, r, apierr.Invalid("after", "want a log position ms-seq, got %q", a))
				return
			}
			after = &p
		}
		limit, err := intParam(v, "limit", contract.DefaultEventsLimit, 1, 1<<31-1)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		limit = min(limit, contract.MaxEventsLimit)
		var wait time.Duration
		if x := v.Get("wait"); x != "" {
			if wait, err = time.ParseDuration(x); err != nil || wait < 0 || wait > contract.MaxEventsWait {
				s.fail(w, r, apierr.Invalid("wait", "want a duration from 0 to %s such as 25s, got %q", contract.MaxEventsWait, x))
				return
			}
		}
		page, err := s.d.Events.Read(r.Context(), after, limit, wait)
		if err != nil {
			if errors.Is(err, r.Context().Err()) && r.Context().Err() != nil {
				return // the gateway went away; nobody to answer
			}
			s.d.Logger.Error("events: read log", "backend", s.d.Events.Backend(), "err", err)
			apierr.Write(w, apierr.New(apierr.UpstreamUnavailable, "the event log (%s) does not answer", s.d.Events.Backend()))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, live.EventsPage(page))
	}
}

// keepQualityJSON reduces stored measurements JSON to those whose flag f keeps (the
// bytes as they are when it keeps all).
func keepQualityJSON(b json.RawMessage, f contract.QCFilter) (json.RawMessage, error) {
	if f.All() {
		return b, nil
	}
	var ms []canon.Measurement
	if err := json.Unmarshal(b, &ms); err != nil {
		return nil, err
	}
	return json.Marshal(keepQuality(ms, f))
}
