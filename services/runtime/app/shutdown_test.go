package app_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/pkg/contract"
)

// With SHUTDOWN_DELAY, a service that is told to stop keeps accepting connections for the
// delay and answers /readyz with 503 on them, so that a load balancer sees it leave before
// its listener closes (the set-up it shares with the gateway, pkg/httpserver).
func TestShutdownDelayAnswersNotReadyBeforeTheListenerCloses(t *testing.T) {
	base, cancel, wait := runService(t, map[string]string{"SHUTDOWN_DELAY": "1500ms", "SIM_STATIONS": "2", "SIM_DAYS": "0"})
	defer cancel()
	fresh := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	readyz := func() (int, string, error) {
		resp, err := fresh.Get(base + contract.PathReadyz)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		var body struct{ Reason string }
		_ = json.NewDecoder(resp.Body).Decode(&body)
		return resp.StatusCode, body.Reason, nil
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
	if err := wait(); err != nil {
		t.Fatalf("run: %v", err)
	}
	if _, _, err := readyz(); err == nil {
		t.Fatal("the listener still accepts after Run returned")
	}
}
