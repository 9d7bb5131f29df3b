package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// watched is how many sensors TestMCPSubscriptions subscribes to, one listen stream each.
const watched = 12

// keyTransport sends an API key with every request, as an MCP host configured with a
// header does.
type keyTransport struct{ key string }

func (k keyTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("x-api-key", k.key)
	return http.DefaultTransport.RoundTrip(r)
}

// TestMCPSubscriptions: a go-sdk client at protocol 2026-07-28 subscribes
// (subscriptions/listen) to a sensor's latest reading and an area's latest readings
// (catalog scope) and to its key's alert events (alerts scope, where an MCP tool made the
// rule); each is told of a change when the service stores a reading
// that an SSE stream of the same sensors delivers, and the resource then reads as REST
// answers it. Subscriptions count against the per-key stream cap with the SSE streams,
// and a year of readings costs more of the rate limit than a latest.
func TestMCPSubscriptions(t *testing.T) {
	st := startStack(t, stackOptions{services: []string{"weather"}, simStations: 40, redis: true})
	g := st.startGateway(t, "gateway", 40, "STREAM_MAX_PER_KEY="+strconv.Itoa(watched+3))

	// Ambient Weather stations report every 5 minutes, each on its own minute: among
	// `watched` of them, one reports within about a minute.
	var list struct {
		Sensors []struct {
			ID           string   `json:"id"`
			ProviderSlug string   `json:"provider_slug"`
			DataTypes    []string `json:"data_types"`
		} `json:"sensors"`
	}
	if r := get(t, g.url+"/api/v1/sensors?provider=ambient-weather&limit="+strconv.Itoa(watched)); r.status != 200 || json.Unmarshal(r.body, &list) != nil || len(list.Sensors) < watched {
		t.Fatalf("ambient sensors: %d %.300s", r.status, r.body)
	}
	var ids []string
	common := map[string]int{}
	for _, s := range list.Sensors {
		ids = append(ids, s.ID)
		for _, d := range s.DataTypes {
			common[d]++
		}
	}
	param := ""
	for d, n := range common {
		if n > common[param] || n == common[param] && d < param {
			param = d
		}
	}
	latestURI := func(id string) string { return "sensorgate://sensors/" + id + "/latest" }
	areaURI := "sensorgate://readings/latest?min_lat=-90&min_lon=-180&max_lat=90&max_lon=180"
	const alertsURI = "sensorgate://alerts/events"

	updates := make(chan string, 10000)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: "e2e", Version: "1"}, &sdk.ClientOptions{
		ResourceUpdatedHandler: func(_ context.Context, req *sdk.ResourceUpdatedNotificationRequest) { updates <- req.Params.URI },
	})
	connect := func(path string) *sdk.ClientSession {
		t.Helper()
		cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: g.url + path,
			HTTPClient: &http.Client{Transport: keyTransport{apiKey}}}, nil)
		if err != nil {
			t.Fatalf("connect %s: %v", path, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("%s: negotiated %q, want 2026-07-28", path, v)
		}
		if caps := cs.InitializeResult().Capabilities; caps.Resources == nil || !caps.Resources.Subscribe {
			t.Fatalf("%s: server/discover does not offer resource subscriptions: %+v", path, caps.Resources)
		}
		return cs
	}
	cs := connect("/api/v1/catalog/mcp")
	as := connect("/api/v1/alerts/mcp")

	subscribe := func(cs *sdk.ClientSession, uri string) {
		t.Helper()
		if err := cs.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err != nil {
			t.Fatalf("subscribe %s: %v", uri, err)
		}
	}
	for _, id := range ids {
		subscribe(cs, latestURI(id))
	}
	subscribe(cs, areaURI)
	subscribe(as, alertsURI)
	stream, r := openStream(t, g.url+"/api/v1/readings/stream?sensor_ids="+strings.Join(ids, ","))
	if stream == nil {
		t.Fatalf("open the sensors' SSE stream: %d %s", r.status, r.body)
	}
	defer stream.close()

	// Every stream slot is taken now (a subscription per URI, as the go-sdk listens once
	// per subscribed resource, and the SSE stream): one more subscription is refused with
	// 429.
	waitFor(t, 20*time.Second, "every subscription to hold its slot", func() bool {
		return listenRaw(t, g.url, areaURI).StatusCode == http.StatusTooManyRequests
	})

	// A rule that fires on the next reading of any of the sensors, made through the MCP tool
	// only now that the alerts subscription holds its slot: an event raised before the
	// subscription began would never be told to it (a listen hears of events created from
	// its start on), and the rule fires once per sensor, so a reading between the rule and
	// the subscription used to fire it unseen for the sensor the SSE stream then delivered.
	res, err := as.CallTool(ctx, &sdk.CallToolParams{Name: "create_alert_rule", Arguments: map[string]any{
		"name": "e2e", "target": map[string]any{"sensor_ids": ids},
		"condition": map[string]any{"parameter": param, "op": "above", "value": -1e9},
	}})
	if err != nil || res.IsError {
		t.Fatalf("create_alert_rule: %v %+v", err, res)
	}
	ruleMade := time.Now()
	var rule struct{ ID string }
	b, _ := json.Marshal(res.StructuredContent)
	if json.Unmarshal(b, &rule) != nil || rule.ID == "" {
		t.Fatalf("create_alert_rule gave no rule id: %s", b)
	}

	// Wait for the next reading of one of the sensors on SSE.
	events, _, _ := stream.collect(t, 5*time.Second)
	for deadline := time.Now().Add(150 * time.Second); len(events) == 0 && time.Now().Before(deadline); {
		events, _, _ = stream.collect(t, 5*time.Second)
	}
	if len(events) == 0 {
		t.Fatalf("no reading of %d sensors on their SSE stream within 150 s", len(ids))
	}
	var ev readingEvent
	if err := json.Unmarshal([]byte(events[0].data), &ev); err != nil {
		t.Fatal(err)
	}
	sensorURI := latestURI(ev.SensorID)
	seen := map[string]bool{}
	// The sensor's and the area's updates follow that reading. The alert event follows the
	// first reading the evaluator sees after it has loaded the rule (it looks for new
	// rules every second), which may be a later reading of another sensor than the one
	// the stream sent first: it is awaited as long as that reading was, counted from the
	// rule's creation.
	readingDeadline := time.After(30 * time.Second)
	alertDeadline := time.After(time.Until(ruleMade.Add(150*time.Second)) + 30*time.Second)
	for !seen[sensorURI] || !seen[areaURI] || !seen[alertsURI] {
		select {
		case u := <-updates:
			seen[u] = true
		case <-readingDeadline:
			if !seen[sensorURI] || !seen[areaURI] {
				t.Fatalf("after reading %s of sensor %s, updates came for %v; want %s and %s", ev.ID, ev.SensorID, seen, sensorURI, areaURI)
			}
		case <-alertDeadline:
			t.Fatalf("%s since the rule was made, updates came for %v; want %s", time.Since(ruleMade).Round(time.Second), seen, alertsURI)
		}
	}

	// The sensor resource is REST's latest answer, holding the reading the stream sent.
	rr, err := cs.ReadResource(ctx, &sdk.ReadResourceParams{URI: sensorURI})
	if err != nil || len(rr.Contents) != 1 {
		t.Fatalf("read %s: %v", sensorURI, err)
	}
	var latest struct {
		Reading struct {
			ID string `json:"id"`
		} `json:"reading"`
	}
	if err := json.Unmarshal([]byte(rr.Contents[0].Text), &latest); err != nil {
		t.Fatalf("%s: %v: %s", sensorURI, err, rr.Contents[0].Text)
	}
	if latest.Reading.ID != ev.ID {
		t.Errorf("the resource holds reading %s, the SSE stream sent %s", latest.Reading.ID, ev.ID)
	}
	if rest := get(t, g.url+"/api/v1/sensors/"+ev.SensorID+"/readings/latest"); !bytes.Contains(rest.body, []byte(latest.Reading.ID)) {
		t.Errorf("the resource's reading %s is not REST's latest: %s", latest.Reading.ID, rest.body)
	}

	// The alert events resource and tool hold the rule's event.
	rr, err = as.ReadResource(ctx, &sdk.ReadResourceParams{URI: alertsURI})
	if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, rule.ID) {
		t.Fatalf("read %s: %v %+v", alertsURI, err, rr)
	}
	res, err = as.CallTool(ctx, &sdk.CallToolParams{Name: "get_alert_events", Arguments: map[string]any{}})
	if b, _ := json.Marshal(res); err != nil || res.IsError || !bytes.Contains(b, []byte(`"state":"firing"`)) {
		t.Fatalf("get_alert_events: %v %s", err, b)
	}
	res, err = as.CallTool(ctx, &sdk.CallToolParams{Name: "delete_alert_rule", Arguments: map[string]any{"rule_id": rule.ID}})
	if err != nil || res.IsError {
		t.Fatalf("delete_alert_rule: %v %+v", err, res)
	}
	if rest := get(t, g.url+"/api/v1/alerts/rules/"+rule.ID); rest.status != http.StatusNotFound {
		t.Errorf("GET the deleted rule: %d %s", rest.status, rest.body)
	}

	// Cost: a year of readings takes 13 requests of the budget, a latest 1. A key of its
	// own on a small plan, so that nothing refills the budget meanwhile.
	small := smallKey(t, st)
	remaining := func(args string) int {
		t.Helper()
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_readings","arguments":` + args + `}}`
		req, _ := http.NewRequest(http.MethodPost, g.url+"/api/v1/catalog/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", small)
		resp, err := httpc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		n, err := strconv.Atoi(resp.Header.Get("X-Ratelimit-Remaining"))
		if resp.StatusCode != 200 || err != nil {
			t.Fatalf("get_readings %s: %d, remaining %q", args, resp.StatusCode, resp.Header.Get("X-Ratelimit-Remaining"))
		}
		return n
	}
	r0 := remaining(`{"sensor_id":"` + ev.SensorID + `","limit":1}`)
	r1 := remaining(`{"sensor_id":"` + ev.SensorID + `","limit":1}`)
	r2 := remaining(`{"sensor_id":"` + ev.SensorID + `","days":365,"limit":1}`)
	if r0-r1 != 1 || r1-r2 != 13 {
		t.Errorf("remaining %d, %d after a call without a span, %d after a year: want steps of 1 and 13", r0, r1, r2)
	}
}

// listenRaw POSTs a subscriptions/listen for uri as a 2026-07-28 client does and returns
// the answer's head (the body, an event stream when accepted, is closed).
func listenRaw(t *testing.T, base, uri string) *http.Response {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["` + uri + `"]},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/catalog/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("x-api-key", apiKey)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "subscriptions/listen")
	resp, err := httpc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s", d, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// smallKey makes a production key on the plan "small" (1,000 requests an hour).
func smallKey(t *testing.T, st *stack) string {
	t.Helper()
	cmd := exec.Command(bins.Path(t, "gateway"), "keys", "create", "--owner", "e2e-small", "--env", "production", "--plan", "small")
	cmd.Env = append(os.Environ(), st.env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("keys create: %v\n%s", err, out)
	}
	key, _, _ := strings.Cut(string(out), "\n")
	return key
}
