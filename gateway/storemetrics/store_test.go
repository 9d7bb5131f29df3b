package storemetrics

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	shared "github.com/sensorgate/sensorgate/pkg/obs"
)

func TestInstrument(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	raw, err := store.Open(ctx, store.Config{SQLitePath: filepath.Join(t.TempDir(), "c.db"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m, err := shared.NewMetrics(reg, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	st := Instrument(raw, m)
	t.Cleanup(func() { _ = st.Close() })

	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	t.Cleanup(func() { _ = tp.Shutdown(ctx) })
	rctx, parent := tp.Tracer("test").Start(ctx, "request")

	if _, err := st.Sensor(rctx, uuid.New()); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("unknown sensor: err = %v, want ErrNotFound passed through", err)
	}
	if _, err := st.Services(rctx); err != nil {
		t.Fatal(err)
	}
	parent.End()
	counts := map[string]uint64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sensorgate_store_query_duration_seconds" {
			continue
		}
		for _, mt := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range mt.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			counts[l["store"]+"."+l["op"]+"."+l["result"]] += mt.GetHistogram().GetSampleCount()
		}
	}
	want := map[string]uint64{"catalog.sensor.ok": 1, "catalog.services.ok": 1}
	for k, n := range want {
		if counts[k] != n {
			t.Errorf("%s: %d samples, want %d (all: %v)", k, counts[k], n, counts)
		}
	}
	if len(counts) != len(want) {
		t.Errorf("series = %v, want only %v (a not-found is not an error)", counts, want)
	}
	var children int
	for _, s := range spans.GetSpans() {
		if s.Name == "catalog.sensor" || s.Name == "catalog.services" {
			children++
			if s.Parent.SpanID() != parent.SpanContext().SpanID() {
				t.Errorf("span %s is not a child of the request span", s.Name)
			}
		}
	}
	if children != 2 {
		t.Errorf("got %d store spans, want 2", children)
	}
}
