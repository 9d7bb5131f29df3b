package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/gateway/api"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/ratelimit"
	"github.com/sensorgate/sensorgate/gateway/store"
)

// apiHandler builds the gateway's HTTP handler over s as the binary wires it for sensor
// lists: key authentication (with its cache), the in-memory rate limiter (a plan too large
// to bite), Gin routing, the catalog handler and JSON encoding. It returns a production key.
func apiHandler(b *testing.B, s *store.Store) (http.Handler, string) {
	b.Helper()
	ctx := context.Background()
	owner, err := s.CreateUser(ctx, catalog.User{Name: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	key, err := auth.Generate(catalog.EnvProduction)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.CreateKey(ctx, catalog.APIKey{Name: "bench", Prefix: key.Prefix, Hash: key.Hash, OwnerID: owner.ID,
		Environment: catalog.EnvProduction, Plan: "bench"}); err != nil {
		b.Fatal(err)
	}
	authn, err := auth.New(s, auth.Options{Environment: catalog.EnvProduction, CacheTTL: 10 * time.Second})
	if err != nil {
		b.Fatal(err)
	}
	identify := func(c *gin.Context) (ratelimit.Identity, bool) {
		id, ok := auth.FromGin(c)
		if !ok {
			return ratelimit.Identity{}, false
		}
		return ratelimit.Identity{KeyID: id.KeyID.String(), Environment: id.Environment, Plan: id.Plan}, true
	}
	plans := ratelimit.Plans{"bench": {Rate: 1 << 30, Period: time.Hour, Burst: 1 << 30}}
	h := api.NewServer(api.Deps{Store: s, Auth: authn,
		RateLimit: ratelimit.Middleware(ratelimit.NewMemory(nil), plans, identify, nil)})
	return h, key.Secret
}

// BenchmarkAPIListSensors measures GET /api/v1/sensors through the whole Gin stack (in
// process, no network), warm: totals cached for the current catalog generation.
//
//	go test ./gateway/bench -run '^$' -bench BenchmarkAPIListSensors -benchtime 200x
func BenchmarkAPIListSensors(b *testing.B) {
	for _, n := range sizes() {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			s, _ := loadedStore(b, n)
			h, secret := apiHandler(b, s)
			get := func(q string) (*httptest.ResponseRecorder, error) {
				req := httptest.NewRequest(http.MethodGet, "/api/v1/sensors?"+q, nil)
				req.Header.Set(auth.Header, secret)
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					return rec, fmt.Errorf("GET ?%s: %d %s", q, rec.Code, rec.Body.String())
				}
				return rec, nil
			}
			for _, q := range queries {
				rec, err := get(q.http)
				if err != nil {
					b.Fatal(err)
				}
				var body struct {
					Sensors    []json.RawMessage   `json:"sensors"`
					Pagination struct{ Total int } `json:"pagination"`
				}
				if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
					b.Fatal(err)
				}
				b.Logf("%s: total %d, page items %d", q.name, body.Pagination.Total, len(body.Sensors))
				b.Run(q.name, func(b *testing.B) {
					samples := make([]time.Duration, 0, b.N)
					for range b.N {
						t0 := time.Now()
						if _, err := get(q.http); err != nil {
							b.Fatal(err)
						}
						samples = append(samples, time.Since(t0))
					}
					percentiles(b, samples)
				})
			}
		})
	}
}
