package mcp

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/jsonrpc"
)

// MaxToolResultBytes bounds a tools/call answer: a result an agent reads goes into its
// context, and 25 KB (some 6,000 tokens) is as much as one call should take. A larger result
// is cut to fit (the first items of its longest lists, the summary text clipped) and says
// so, with a resource_link to the REST URL that serves the whole of it.
const MaxToolResultBytes = 25 << 10

// structuredBudget is what the cut structured content may take: the rest of the answer is
// the summary, the note and the link.
const structuredBudget = MaxToolResultBytes - 5<<10

// maxSummaryText is how much of the tool's own summary text a cut answer keeps.
const maxSummaryText = 2000

// restLink is where the whole of a too-large result is: a REST URL and its media type;
// parquet, for readings, the same rows as a Parquet file.
type restLink struct {
	uri, mime, name string
	parquet         string
}

// fitAnswer returns answer when it is within MaxToolResultBytes, otherwise the same result
// cut to fit. A tool failure or a JSON-RPC error is never cut (they are small by design).
func fitAnswer(answer []byte, tool string, link restLink) []byte {
	if len(answer) <= MaxToolResultBytes {
		return answer
	}
	msg, err := jsonrpc.Decode(answer)
	resp, ok := msg.(*jsonrpc.Response)
	if err != nil || !ok || resp.Error != nil {
		return answer
	}
	var res map[string]json.RawMessage
	if json.Unmarshal(resp.Result, &res) != nil {
		return answer
	}
	var summary string
	var content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(res["content"], &content) == nil {
		for _, c := range content {
			if c.Type == "text" {
				summary = c.Text
				break
			}
		}
	}
	if len(summary) > maxSummaryText {
		summary = clip(summary, maxSummaryText)
	}
	note := fmt.Sprintf("The full result of %s is %d bytes, more than the %d KB a tool answer carries", tool, len(answer), MaxToolResultBytes>>10)
	if sc, ok := res["structuredContent"]; ok && len(sc) > 0 && string(sc) != "null" {
		var v any
		if json.Unmarshal(sc, &v) == nil {
			cut, kept, total := shrink(v, structuredBudget)
			if b, err := json.Marshal(cut); err == nil {
				res["structuredContent"] = b
				if total > 0 {
					note += fmt.Sprintf(": structuredContent keeps the first %d of %d items of its longest list", kept, total)
				}
			}
		}
	}
	if link.uri != "" {
		note += ". The whole result is at " + link.uri + " (GET with the same x-api-key), or ask this tool for less (a smaller limit, a shorter time range, fewer parameters)."
		if link.parquet != "" {
			note += " For a notebook: the same rows as Parquet at " + link.parquet + ", and /api/v1/readings/export takes format=parquet or format=netcdf (CF time series with QARTOD flags) for whole ranges."
		}
	} else {
		note += ". Ask this tool for less (a smaller limit, a narrower filter)."
	}
	blocks := []map[string]any{{"type": "text", "text": strings.TrimSpace(summary + "\n\n" + note)}}
	if link.uri != "" {
		blocks = append(blocks, map[string]any{"type": "resource_link", "uri": link.uri, "name": link.name, "mimeType": link.mime,
			"description": "The whole result of " + tool + " over the gateway's REST API"})
	}
	if link.parquet != "" {
		blocks = append(blocks, map[string]any{"type": "resource_link", "uri": link.parquet, "name": "readings.parquet", "mimeType": "application/vnd.apache.parquet",
			"description": "The whole result of " + tool + " as Parquet (typed columns for pandas, DuckDB, Arrow)"})
	}
	res["content"], _ = json.Marshal(blocks)
	out, err := jsonrpc.NewResult(resp.ID, res)
	if err != nil {
		return answer
	}
	b := marshalResponse(out)
	if len(b) > MaxToolResultBytes {
		// Nothing list-like to cut (one huge string): the summary and the link only.
		delete(res, "structuredContent")
		if out, err = jsonrpc.NewResult(resp.ID, res); err == nil {
			b = marshalResponse(out)
		}
	}
	return b
}

// shrink halves the longest list inside v until v marshals within budget; it returns the
// cut value and, for the list it cut most, how many items it kept of how many.
func shrink(v any, budget int) (any, int, int) {
	kept, total := 0, 0
	for range 64 {
		b, err := json.Marshal(v)
		if err != nil || len(b) <= budget {
			break
		}
		arr, set := longest(v)
		if arr == nil || len(arr) == 0 {
			break
		}
		if total == 0 || len(arr) > kept {
			total = len(arr)
		}
		n := len(arr) / 2
		set(arr[:n])
		kept = n
	}
	return v, kept, total
}

// longest finds the list with the most items in v (objects and lists, recursively) and a
// function that replaces it.
func longest(v any) ([]any, func([]any)) {
	var best []any
	var bestSet func([]any)
	var walk func(v any, set func([]any))
	walk = func(v any, set func([]any)) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				walk(e, func(a []any) { x[k] = a })
			}
		case []any:
			if set != nil && len(x) > len(best) {
				best, bestSet = x, set
			}
			for i, e := range x {
				walk(e, func(a []any) { x[i] = a })
			}
		}
	}
	walk(v, nil)
	return best, bestSet
}

// linkFor is the REST URL of the whole result of a tool call, when the gateway has one:
// readings as CSV, sensor lists as NDJSON. base is the gateway's origin as the client
// reached it.
func linkFor(base string, sc *scope, tool string, args json.RawMessage) restLink {
	var a map[string]any
	_ = json.Unmarshal(args, &a)
	str := func(k string) string {
		if s, ok := a[k].(string); ok {
			return s
		}
		return ""
	}
	q := url.Values{}
	copyArgs := func(keys ...string) {
		for _, k := range keys {
			if s := str(k); s != "" {
				q.Set(k, s)
			}
		}
	}
	short := tool
	if i := strings.LastIndexAny(short, "._"); i >= 0 && sc.service != nil && strings.HasPrefix(tool, sc.service.ID) {
		short = tool[i+1:]
	}
	sensor := str("sensor_id")
	if sensor == "" && sc.sensor != nil {
		sensor = sc.sensor.ID.String()
	}
	switch {
	case strings.Contains(short, "reading") || strings.Contains(short, "stream") || strings.Contains(short, "observation") || strings.Contains(short, "history"):
		if sensor == "" {
			return restLink{}
		}
		q.Set("format", "csv")
		copyArgs("from", "to", "sort")
		if n, ok := a["limit"].(float64); ok && n >= 1 {
			q.Set("limit", strconv.Itoa(int(n)))
		}
		if p, ok := a["parameters"].([]any); ok {
			var ps []string
			for _, x := range p {
				if s, ok := x.(string); ok {
					ps = append(ps, s)
				}
			}
			q.Set("parameters", strings.Join(ps, ","))
		} else {
			copyArgs("parameters")
		}
		link := restLink{uri: base + "/api/v1/sensors/" + url.PathEscape(sensor) + "/readings?" + q.Encode(), mime: "text/csv", name: "readings.csv"}
		// The same rows typed, for a notebook (pandas, DuckDB): docs/formats.md.
		q.Set("format", "parquet")
		link.parquet = base + "/api/v1/sensors/" + url.PathEscape(sensor) + "/readings?" + q.Encode()
		return link
	case strings.Contains(short, "sensors") || short == "describe_catalog":
		// The REST list filters by text, type, status and provider; a tool's other
		// filters (feed, service, area) narrow it further than the link does.
		q.Set("format", "ndjson")
		if s := str("query"); s != "" {
			q.Set("search", s)
		}
		copyArgs("sensor_type", "status", "provider")
		return restLink{uri: base + "/api/v1/sensors?" + q.Encode(), mime: "application/x-ndjson", name: "sensors.ndjson"}
	}
	return restLink{}
}
