// Command apiclient walks sensorgate's public REST API with net/http alone: it finds buoys,
// reads the newest reading of the first, and prints a week of its daily means. It is its own
// module and imports nothing of the repository: what it shows works from any Go program.
//
//	cd examples/go && go run . -sensor-type buoy -parameter water_temperature_c
//
// SENSORGATE_URL (default http://127.0.0.1:8080) and SENSORGATE_KEY (default the development
// key of `make run`) say where and who.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"
)

// client calls the API with the key on every request.
type client struct {
	base, key string
	http      *http.Client
}

// apiError is the API's error envelope: every 4xx and 5xx names its culprit.
type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

// get GETs path with query into out, turning the error envelope into a Go error.
func (c *client) get(ctx context.Context, path string, query url.Values, out any) error {
	u := c.base + "/api/v1" + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return err
	}
	req.Header.Set("x-api-key", c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	if resp.StatusCode != http.StatusOK {
		var e apiError
		_ = json.Unmarshal(body, &e)
		return fmt.Errorf("GET %s: %d %s (%s)", u, resp.StatusCode, e.Error, e.Code)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	return nil
}

type sensorPage struct {
	Sensors []struct {
		ID         string `json:"id"`
		ExternalID string `json:"external_id"`
		Name       string `json:"name"`
	} `json:"sensors"`
	Pagination struct {
		Total int `json:"total"`
	} `json:"pagination"`
}

type reading struct {
	Timestamp    string `json:"timestamp"`
	Measurements []struct {
		Parameter string   `json:"parameter"`
		Value     *float64 `json:"value"`
		Unit      string   `json:"unit"`
	} `json:"measurements"`
}

type aggregate struct {
	TZ      string `json:"tz"`
	Buckets []struct {
		StartLocal string `json:"start_local"`
		Values     map[string]struct {
			Mean  *float64 `json:"mean"`
			Count int      `json:"count"`
		} `json:"values"`
	} `json:"buckets"`
}

func main() {
	sensorType := flag.String("sensor-type", "buoy", "sensor type to look for")
	parameter := flag.String("parameter", "water_temperature_c", "parameter of the daily means")
	tz := flag.String("tz", "UTC", "IANA zone of the days")
	flag.Parse()
	c := &client{
		base: strings.TrimSuffix(envOr("SENSORGATE_URL", "http://127.0.0.1:8080"), "/"),
		key:  envOr("SENSORGATE_KEY", "sg_dev_4f7b1d2c9a8e6b3f0d5c7a9e1b2d4f6a"),
		http: &http.Client{Timeout: 30 * time.Second},
	}
	ctx := context.Background()

	var page sensorPage
	if err := c.get(ctx, "/sensors", url.Values{"sensor_type": {*sensorType}, "limit": {"3"}}, &page); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d sensors of type %s; the first %d:\n", page.Pagination.Total, *sensorType, len(page.Sensors))
	for _, s := range page.Sensors {
		fmt.Printf("  %s  %-8s %s\n", s.ID, s.ExternalID, s.Name)
	}
	if len(page.Sensors) == 0 {
		log.Fatalf("no sensor of type %s", *sensorType)
	}
	id := page.Sensors[0].ID

	var latest reading
	if err := c.get(ctx, "/sensors/"+id+"/readings/latest", nil, &latest); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("latest reading of %s at %s:\n", page.Sensors[0].ExternalID, latest.Timestamp)
	for _, m := range latest.Measurements {
		if m.Value != nil {
			fmt.Printf("  %-24s %10.2f %s\n", m.Parameter, *m.Value, m.Unit)
		}
	}

	var agg aggregate
	q := url.Values{"interval": {"1d"}, "days": {"7"}, "tz": {*tz}, "parameter": {*parameter}, "stats": {"mean,count"}}
	if err := c.get(ctx, "/sensors/"+id+"/readings/aggregate", q, &agg); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("daily %s (%s):\n", *parameter, agg.TZ)
	for _, b := range agg.Buckets {
		v := b.Values[*parameter]
		mean := "       -"
		if v.Mean != nil {
			mean = fmt.Sprintf("%8.2f", *v.Mean)
		}
		fmt.Printf("  %s  mean %s  count %d\n", b.StartLocal[:10], mean, v.Count)
	}
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
