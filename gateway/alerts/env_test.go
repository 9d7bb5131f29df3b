package alerts

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/ginerr"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// loopback is the tests' allowlist: their receivers listen on 127.0.0.1.
var loopback = Guard{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}

// openCatalog opens a fresh, migrated catalog database of one dialect.
func openCatalog(t testing.TB, postgres bool) *store.Store {
	t.Helper()
	cfg := store.Config{Logger: slog.New(slog.DiscardHandler)}
	if postgres {
		cfg.DatabaseURL = testenv.Postgres(t)
	} else {
		cfg.SQLitePath = filepath.Join(t.TempDir(), "catalog.db")
	}
	cat, err := store.Open(context.Background(), cfg)
	if err != nil {
		t.Fatalf("open catalog: %v", err)
	}
	t.Cleanup(func() { _ = cat.Close() })
	return cat
}

func openStore(t testing.TB, cat *store.Store) *Store {
	t.Helper()
	st, err := NewStore(context.Background(), cat.DB(), cat.Postgres(), nil)
	if err != nil {
		t.Fatalf("alerts store: %v", err)
	}
	return st
}

// apiEnv is the alert routes mounted as routes.go mounts them (key check, the one error
// renderer) on a real catalog database.
type apiEnv struct {
	cat *store.Store
	st  *Store
	url string
	a   *auth.Authenticator
}

func newAPI(t *testing.T, postgres bool, quotas Quotas) *apiEnv {
	t.Helper()
	cat := openCatalog(t, postgres)
	st := openStore(t, cat)
	a, err := auth.New(cat, auth.Options{Environment: catalog.EnvDevelopment})
	if err != nil {
		t.Fatal(err)
	}
	gin.SetMode(gin.ReleaseMode)
	r := gin.New()
	r.Use(ginerr.Render(slog.New(slog.DiscardHandler)))
	v1 := r.Group("/api/v1", auth.Middleware(a))
	h := &Handlers{Store: st, Guard: loopback, Quota: quotas.For, StreamPoll: 50 * time.Millisecond}
	for _, rt := range h.Routes() {
		v1.Handle(rt.Method, rt.Path, rt.Handler)
	}
	seedCatalog(t, cat)
	h.Resolve, h.Projects = catalog.NewResolver(cat, -1).Resolve, cat
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return &apiEnv{cat: cat, st: st, url: srv.URL + "/api/v1", a: a}
}

// The catalog the rules' targets resolve against: two sensors of one service (sensorA,
// external id "AQ-1", and sensorB, "AQ-2") in the public feed projectP, and alice's private
// project privateP.
const (
	projectP = "7b2e9c74-5e60-5c77-9f5d-3e7c2a4d9b33"
	privateP = "8c3fad85-6f71-5d88-8a6e-4f8d3b5eac44"
)

func seedCatalog(t *testing.T, cat *store.Store) {
	t.Helper()
	ctx := context.Background()
	pid := uuid.MustParse(projectP)
	sensor := func(id, ext string, lat float64) catalog.Sensor {
		return catalog.Sensor{ID: uuid.MustParse(id), ExternalID: ext, Name: "Station " + ext, SensorType: "air_quality",
			ProviderSlug: "test", FeedSlug: "aq-feed", FeedID: &pid, Latitude: &lat, Longitude: ptr(2.35)}
	}
	if _, err := cat.Sync(ctx, catalog.SyncBatch{
		Service:   catalog.Service{ID: "airquality", Name: "airquality"},
		Providers: []catalog.Provider{{Slug: "test", Name: "Test provider"}},
		Projects:  []catalog.Project{{ID: pid, Slug: "aq-feed", Name: "AQ feed", ProviderSlug: "test", ServiceID: "airquality"}},
		Sensors:   []catalog.Sensor{sensor(sensorA, "AQ-1", 48.85), sensor(sensorB, "AQ-2", 48.9)},
		Full:      true,
	}); err != nil {
		t.Fatalf("sync the catalog: %v", err)
	}
	if _, err := cat.CreateUser(ctx, catalog.User{ID: auth.OwnerID("alice"), Name: "alice"}); err != nil && !errors.Is(err, catalog.ErrConflict) {
		t.Fatal(err)
	}
	if _, err := cat.CreateProject(ctx, catalog.Project{ID: uuid.MustParse(privateP), Slug: "alice-private", Name: "Alice's",
		OwnerID: auth.OwnerID("alice"), Visibility: catalog.VisibilityPrivate}); err != nil {
		t.Fatalf("private project: %v", err)
	}
}

// key stores a development key of plan for a fresh owner and returns its secret and id.
func (e *apiEnv) key(t *testing.T, owner, plan string) (string, string) {
	t.Helper()
	ctx := context.Background()
	if _, err := e.cat.CreateUser(ctx, catalog.User{ID: auth.OwnerID(owner), Name: owner}); err != nil && !errors.Is(err, catalog.ErrConflict) {
		t.Fatal(err)
	}
	nk, err := auth.Generate(catalog.EnvDevelopment)
	if err != nil {
		t.Fatal(err)
	}
	k, err := e.cat.CreateKey(ctx, catalog.APIKey{Prefix: nk.Prefix, Hash: nk.Hash, OwnerID: auth.OwnerID(owner), Environment: catalog.EnvDevelopment, Plan: plan})
	if err != nil {
		t.Fatal(err)
	}
	return nk.Secret, k.ID.String()
}

// call makes a request and decodes a JSON answer into out (when not nil).
func (e *apiEnv) call(t *testing.T, key, method, path string, body any, out any) int {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = bytes.NewReader([]byte(b))
	default:
		buf, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(buf)
	}
	req, err := http.NewRequest(method, e.url+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(auth.Header, key)
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %s: %v", method, path, resp.StatusCode, raw, err)
		}
	}
	return resp.StatusCode
}

// eachDialect runs fn on PostgreSQL and on SQLite.
func eachDialect(t *testing.T, fn func(t *testing.T, postgres bool)) {
	for _, pg := range []bool{true, false} {
		name := "sqlite"
		if pg {
			name = "postgres"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			fn(t, pg)
		})
	}
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }

func itoa(n int) string { return strconv.Itoa(n) }
