package openapi_test

import (
	"bytes"
	"encoding/hex"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// span is what the test keeps of an exported span.
type span struct {
	service, name, traceID, spanID, parentID string
}

// otlpReceiver is a minimal OTLP/HTTP trace endpoint that keeps every span it is sent.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	var req coltrace.ExportTraceServiceRequest
	if err != nil || r.URL.Path != "/v1/traces" || proto.Unmarshal(b, &req) != nil {
		http.Error(w, "bad export", http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, sp := range ss.GetSpans() {
				o.spans = append(o.spans, span{service: service, name: sp.GetName(),
					traceID: hex.EncodeToString(sp.GetTraceId()), spanID: hex.EncodeToString(sp.GetSpanId()),
					parentID: hex.EncodeToString(sp.GetParentSpanId())})
			}
		}
	}
	w.Header().Set("Content-Type", "application/x-protobuf")
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	_, _ = w.Write(out)
}

func (o *otlpReceiver) trace(id string) []span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []span
	for _, s := range o.spans {
		if s.traceID == id {
			out = append(out, s)
		}
	}
	return out
}

// TestTraceCrossesProcesses runs the gateway and the ocean service with the standard OTEL_*
// variables pointing at an OTLP receiver, sends one readings request with a caller's
// traceparent, and checks that one trace links the caller, the gateway's server span, its
// upstream client span, the service's server span and the service's store span.
func TestTraceCrossesProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binaries")
	}
	t.Parallel()
	bins := buildBinaries(t)
	dir := t.TempDir()
	rcv := &otlpReceiver{}
	collector := httptest.NewServer(rcv)
	t.Cleanup(collector.Close)
	otel := []string{"OTEL_EXPORTER_OTLP_ENDPOINT=" + collector.URL, "OTEL_BSP_SCHEDULE_DELAY=100", "OTEL_TRACES_SAMPLER=parentbased_always_on"}

	oceanAddr, gwAddr := testenv.FreeAddr(t), testenv.FreeAddr(t)
	testenv.Start(t, bins["ocean"], append(otel, "SERVICE_ADDR="+oceanAddr, "READINGS_SQLITE_PATH="+filepath.Join(dir, "ocean.db"),
		"SOURCE_MODE=simulate", "SIM_STATIONS=2", "SIM_DAYS=1", "SIM_SEED=3")...)
	testenv.WaitFor(t, "ocean", "http://"+oceanAddr+"/readyz", nil, 90*time.Second, func(s int, _ []byte) bool { return s == 200 })
	testenv.Start(t, bins["gateway"], append(otel, "GATEWAY_ADDR="+gwAddr, "SQLITE_PATH="+filepath.Join(dir, "catalog.db"),
		"SENSORGATE_ENV=development", "DEV_API_KEY="+devKey, "SERVICE_URLS=ocean=http://"+oceanAddr, "SYNC_INTERVAL=1s")...)
	base := "http://" + gwAddr
	var external string
	testenv.WaitFor(t, "gateway catalog sync", base+"/api/v1/sensors?fields=external_id&limit=1", http.Header{"X-Api-Key": {devKey}}, 90*time.Second, func(s int, b []byte) bool {
		if s != 200 {
			return false
		}
		const marker = `"external_id":"`
		if i := bytes.Index(b, []byte(marker)); i >= 0 {
			rest := b[i+len(marker):]
			if j := bytes.IndexByte(rest, '"'); j > 0 {
				external = string(rest[:j])
				return true
			}
		}
		return false
	})

	const traceID, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	req, _ := http.NewRequest("GET", base+"/api/v1/sensors/"+external+"/readings/latest", nil)
	req.Header.Set("x-api-key", devKey)
	req.Header.Set("traceparent", "00-"+traceID+"-"+callerSpan+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("latest reading: status %d", resp.StatusCode)
	}

	find := func(spans []span, service, name string) (span, bool) {
		for _, s := range spans {
			if s.service == service && s.name == name {
				return s, true
			}
		}
		return span{}, false
	}
	var (
		gwServer, gwClient, svcServer, store span
		spans                                []span
	)
	deadline := time.Now().Add(30 * time.Second)
	for {
		spans = rcv.trace(traceID)
		var ok1, ok2, ok3, ok4 bool
		gwServer, ok1 = find(spans, "gateway", "GET /api/v1/sensors/:id/readings/latest")
		gwClient, ok2 = find(spans, "gateway", "GET")
		svcServer, ok3 = find(spans, "sensorgate-ocean", "GET GET /v1/sensors/{id}/readings/latest")
		store, ok4 = find(spans, "sensorgate-ocean", "readings.latest_reading")
		if ok1 && ok2 && ok3 && ok4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("trace %s is incomplete after 30s: %+v", traceID, spans)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, link := range []struct {
		child  span
		parent string
	}{
		{gwServer, callerSpan}, {gwClient, gwServer.spanID}, {svcServer, gwClient.spanID}, {store, svcServer.spanID},
	} {
		if link.child.parentID != link.parent {
			t.Errorf("span %s/%q has parent %s, want %s", link.child.service, link.child.name, link.child.parentID, link.parent)
		}
	}
}
