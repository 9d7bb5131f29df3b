package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/testenv"
	"github.com/sensorgate/sensorgate/services/ocean"
	"github.com/sensorgate/sensorgate/services/runtime/app"
)

// With SHUTDOWN_DELAY, a service that is told to stop keeps accepting connections for the
// delay and answers /readyz with 503 on them, so that a load balancer sees it leave before
// its listener closes (the set-up it shares with the gateway, pkg/httpserver).
func TestShutdownDelayAnswersNotReadyBeforeTheListenerCloses(t *testing.T) {
	addr := testenv.FreeAddr(t)
	env := map[string]string{"SERVICE_ADDR": addr, "READINGS_SQLITE_PATH": filepath.Join(t.TempDir(), "ocean.db"),
		"SHUTDOWN_DELAY": "1500ms", "SIM_STATIONS": "2", "SIM_DAYS": "0"}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out bytes.Buffer
	var mu sync.Mutex
	errc := make(chan error, 1)
	go func() {
		errc <- app.Run(ctx, ocean.Definition(echoTool), nil, func(k string) string { return env[k] }, lockedWriter{&mu, &out})
	}()
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	readyz := func() (int, string, error) {
		resp, err := fresh.Get("http://" + addr + contract.PathReadyz)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var body struct{ Reason string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Reason, nil
	}
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if code, _, _ := readyz(); code == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("service not ready after 60s:\n%s", out.String())
		}
	}
	cancel()
	time.Sleep(200 * time.Millisecond) // well inside the delay
	code, reason, err := readyz()
	if err != nil {
		t.Fatalf("readyz during the shutdown delay: %v (the listener closed first)", err)
	}
	if code != http.StatusServiceUnavailable || reason != "the service is shutting down" {
		t.Fatalf("readyz during the shutdown delay = %d %q, want 503 \"the service is shutting down\"", code, reason)
	}
	select {
	case err := <-errc:
		if err != nil {
			t.Fatalf("run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("service did not stop within 30s")
	}
	if _, _, err := readyz(); err == nil {
		t.Fatal("the listener still accepts after Run returned")
	}
}
