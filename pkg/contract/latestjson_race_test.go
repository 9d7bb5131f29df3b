package contract

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestLatestBatchAnswersNeverMix: DecodeLatestBatch keeps each item's measurements as a
// slice of the response body instead of copying them, so a body shared or reused between
// calls would hand one request another's values. 40 goroutines ask concurrently for their
// own ids (run under -race by make test); every item must carry its own id's values, also
// after the calls that made them returned.
func TestLatestBatchAnswersNeverMix(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req LatestBatchRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		ts := Time{Time: time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC)}
		resp := LatestBatchResponse{ServiceID: "ocean", ServerTime: ts}
		for _, id := range req.ExternalIDs {
			resp.Items = append(resp.Items, LatestItem{ExternalID: id, ReportingIntervalS: 600, Timestamp: &ts,
				Measurements: json.RawMessage(`[{"parameter":"station","value":0,"unit":"` + id + `"}]`)})
		}
		b, err := AppendLatestBatch(nil, &resp)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	defer srv.Close()
	c, err := NewClient("ocean", srv.URL, Options{})
	if err != nil {
		t.Fatal(err)
	}

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		kept []LatestItem
	)
	for g := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				ids := []string{fmt.Sprintf("g%d-r%d-a", g, i), fmt.Sprintf("g%d-r%d-b", g, i)}
				resp, err := c.LatestBatch(context.Background(), ids, QCAll)
				if err != nil {
					t.Error(err)
					return
				}
				if len(resp.Items) != len(ids) {
					t.Errorf("%v: %d items", ids, len(resp.Items))
					return
				}
				mu.Lock()
				kept = append(kept, resp.Items...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if len(kept) != 40*25*2 {
		t.Fatalf("%d items kept, want %d", len(kept), 40*25*2)
	}
	for _, it := range kept {
		if !strings.Contains(string(it.Measurements), `"unit":"`+it.ExternalID+`"`) {
			t.Fatalf("item %s carries another request's measurements: %s", it.ExternalID, it.Measurements)
		}
	}
}
