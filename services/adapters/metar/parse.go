package metar

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/services/adapters/internal/batch"
	"github.com/sensorgate/sensorgate/services/observation"
)

// ErrNotMETAR is returned for a payload that is not METAR text or an ADDS METAR result.
var ErrNotMETAR = errors.New("metar: not METAR reports")

// ParseText reads raw METAR text, one report a line (a line may start with its
// observation time "2018/01/11 15:16", as NOAA's station text files do; blank lines and
// lines of other text are rejected rows). ref dates the reports (see Report.timeIn).
func ParseText(data []byte, ref time.Time) (observation.Batch, error) {
	b := batch.New(ProviderSlug)
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	n, decoded := 0, 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || isDateLine(line) {
			continue
		}
		r, err := Decode(line)
		if err != nil {
			b.Reject("", n, "", batch.ReasonMalformedRow, err.Error())
			continue
		}
		decoded++
		t, err := r.timeIn(ref)
		if err != nil {
			b.Reject(r.Station, n, "time", batch.ReasonBadTimestamp, err.Error())
			continue
		}
		raw, err := json.Marshal(map[string]string{"format": RawText, "line": line})
		if err != nil {
			b.Reject(r.Station, n, "", batch.ReasonMalformedRow, err.Error())
			continue
		}
		r.emit(b, n, t, nil, nil, raw, RawText)
	}
	if err := sc.Err(); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: %w", ErrNotMETAR, err)
	}
	if decoded == 0 && n > 0 {
		return observation.Batch{}, fmt.Errorf("%w: no line is a METAR report", ErrNotMETAR)
	}
	b.SetRecords(decoded)
	return b.Finish(base), nil
}

func isDateLine(s string) bool {
	_, err := time.Parse("2006/01/02 15:04", s)
	return err == nil
}

type addsResult struct {
	Errors json.RawMessage `json:"errors"`
	Data   *struct {
		METAR json.RawMessage `json:"METAR"`
	} `json:"data"`
}

type addsRecord struct {
	RawText         string `json:"raw_text"`
	StationID       string `json:"station_id"`
	ObservationTime string `json:"observation_time"`
	Latitude        string `json:"latitude"`
	Longitude       string `json:"longitude"`
	ElevationM      string `json:"elevation_m"`
}

// ParseADDSJSON reads an ADDS METAR result converted to JSON: the values come from decoding
// each record's raw_text (the same decoder as ParseText), the time from observation_time,
// the position from latitude/longitude. The record's own decoded fields (temp_c,
// wind_dir_degrees, ...) are not read, so that both formats have one decoder; ADDS also
// writes wind_dir_degrees "0" for a VRB wind, a direction the report does not give. A test
// checks that the decoded values agree with those fields for every recorded record.
func ParseADDSJSON(data []byte) (observation.Batch, error) {
	var res addsResult
	if err := json.Unmarshal(data, &res); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: %w", ErrNotMETAR, err)
	}
	if res.Data == nil || len(res.Data.METAR) == 0 {
		return observation.Batch{}, fmt.Errorf("%w: no data.METAR", ErrNotMETAR)
	}
	// A single report is an object, several an array (XML-to-JSON conversion).
	var recs []json.RawMessage
	if t := bytes.TrimSpace(res.Data.METAR); len(t) > 0 && t[0] == '{' {
		recs = []json.RawMessage{t}
	} else if err := json.Unmarshal(res.Data.METAR, &recs); err != nil {
		return observation.Batch{}, fmt.Errorf("%w: data.METAR: %w", ErrNotMETAR, err)
	}
	b := batch.New(ProviderSlug)
	for at, rec := range batch.Records[addsRecord](b, "", "record", recs) {
		n, raw := at.N, at.Raw
		r, err := Decode(rec.RawText)
		if err != nil {
			b.Reject(strings.TrimSpace(rec.StationID), n, "raw_text", batch.ReasonMalformedRow, err.Error())
			continue
		}
		if id := strings.TrimSpace(rec.StationID); id != "" && id != r.Station {
			b.Reject(id, n, "station_id", batch.ReasonMissingStation, fmt.Sprintf("station_id %q and the report's %q differ", batch.Truncate(id, 20), r.Station))
			continue
		}
		if err := contract.ValidExternalID(r.Station); err != nil {
			b.Reject("", n, "station_id", batch.ReasonMissingStation, err.Error())
			continue
		}
		t, err := time.Parse(time.RFC3339, strings.TrimSpace(rec.ObservationTime))
		if err != nil {
			b.Reject(r.Station, n, "observation_time", batch.ReasonBadTimestamp, fmt.Sprintf("observation_time %q is not RFC 3339", batch.Truncate(rec.ObservationTime, 40)))
			continue
		}
		if t.Day() != r.Day || t.Hour() != r.Hour || t.Minute() != r.Minute {
			b.Reject(r.Station, n, "observation_time", batch.ReasonBadTimestamp, fmt.Sprintf("observation_time %s disagrees with the report's %02d%02d%02dZ", t.Format(time.RFC3339), r.Day, r.Hour, r.Minute))
			continue
		}
		var lat, lon *float64
		la, e1 := strconv.ParseFloat(strings.TrimSpace(rec.Latitude), 64)
		lo, e2 := strconv.ParseFloat(strings.TrimSpace(rec.Longitude), 64)
		if e1 == nil && e2 == nil {
			var ok bool
			if lat, lon, ok = batch.Coord(la, lo); !ok {
				b.Reject(r.Station, n, "latitude/longitude", batch.ReasonBadCoordinates, fmt.Sprintf("position %q %q is out of range", rec.Latitude, rec.Longitude))
			}
		}
		compact, err := batch.CompactRaw(raw)
		if err != nil {
			b.Reject(r.Station, n, "", batch.ReasonMalformedRow, err.Error())
			continue
		}
		r.emit(b, n, t, lat, lon, compact, RawRecord)
		b.Note(r.Station, lat, lon)
	}
	return b.Finish(base), nil
}

// emit stores the report, record n of its payload, as the observation at t with its raw
// fragment; values it reports but not exactly are rejections of record n.
func (r Report) emit(b *batch.Builder, n int, t time.Time, lat, lon *float64, raw json.RawMessage, rawFormat string) {
	ms := b.Start(r.Station, n)
	r.add(ms, func(field, reason, detail string) { b.Reject(r.Station, n, field, reason, detail) })
	ms.Emit(t, lat, lon, raw, rawFormat)
}
