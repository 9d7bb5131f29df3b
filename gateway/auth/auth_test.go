package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/testenv"
)

// stores gives each test a real catalog on both databases.
func stores(t *testing.T) map[string]func(t *testing.T) *store.Store {
	open := func(t *testing.T, cfg store.Config) *store.Store {
		st, err := store.Open(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = st.Close() })
		return st
	}
	return map[string]func(t *testing.T) *store.Store{
		"sqlite": func(t *testing.T) *store.Store {
			return open(t, store.Config{SQLitePath: filepath.Join(t.TempDir(), "c.db")})
		},
		"postgres": func(t *testing.T) *store.Store {
			return open(t, store.Config{DatabaseURL: testenv.Postgres(t)})
		},
	}
}

// clock is a settable test clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestGenerate(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, env := range []string{catalog.EnvDevelopment, catalog.EnvProduction} {
		for range 50 {
			k, err := Generate(env)
			if err != nil {
				t.Fatal(err)
			}
			want := `^sg_dev_[0-9a-f]{32}$`
			if env == catalog.EnvProduction {
				want = `^sg_live_[0-9a-f]{32}$`
			}
			if !regexp.MustCompile(want).MatchString(k.Secret) {
				t.Fatalf("key %q does not match %s", k.Secret, want)
			}
			if seen[k.Secret] {
				t.Fatalf("key %q generated twice", k.Secret)
			}
			seen[k.Secret] = true
			sum := sha256.Sum256([]byte(k.Secret))
			if string(k.Hash) != string(sum[:]) {
				t.Errorf("hash is not the SHA-256 of the key")
			}
			// The prefix is the environment marker and 8 hex characters: 32 bits shown, 96 kept.
			if !strings.HasPrefix(k.Secret, k.Prefix) || len(k.Prefix) != len(k.Secret)-32+prefixHexChars {
				t.Errorf("prefix %q of %q", k.Prefix, k.Secret)
			}
		}
	}
	if _, err := Generate("staging"); err == nil {
		t.Error("Generate accepted environment staging")
	}
}

func TestOwnerIDIsStable(t *testing.T) {
	t.Parallel()
	if OwnerID("Alice") != OwnerID(" alice ") || OwnerID("alice") == OwnerID("bob") {
		t.Error("OwnerID must depend on the trimmed, case-folded name only")
	}
}

// newKey stores a generated key for a fresh owner and returns its secret.
func newKey(t *testing.T, st *store.Store, env, owner string) (string, catalog.APIKey) {
	t.Helper()
	ctx := context.Background()
	if _, err := st.CreateUser(ctx, catalog.User{ID: OwnerID(owner), Name: owner}); err != nil && !errors.Is(err, catalog.ErrConflict) {
		t.Fatal(err)
	}
	nk, err := Generate(env)
	if err != nil {
		t.Fatal(err)
	}
	k, err := st.CreateKey(ctx, catalog.APIKey{Prefix: nk.Prefix, Hash: nk.Hash, OwnerID: OwnerID(owner), Environment: env, Plan: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	return nk.Secret, k
}

func code(err error) string {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e.Code
	}
	if err != nil {
		return "error: " + err.Error()
	}
	return ""
}

func TestAuthenticate(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			ctx := context.Background()
			dev, devRow := newKey(t, st, catalog.EnvDevelopment, "alice")
			prod, _ := newKey(t, st, catalog.EnvProduction, "alice")
			revoked, revokedRow := newKey(t, st, catalog.EnvDevelopment, "bob")
			if _, err := st.RevokeKey(ctx, revokedRow.ID.String(), time.Now()); err != nil {
				t.Fatal(err)
			}
			a, err := New(st, Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct {
				name, key, want string
			}{
				{"missing", "", apierr.MissingAPIKey},
				{"unknown", "sg_dev_ffffffffffffffffffffffffffffffff", apierr.InvalidAPIKey},
				{"other environment", prod, apierr.InvalidAPIKey},
				{"revoked", revoked, apierr.InvalidAPIKey},
				{"over-long", strings.Repeat("x", MaxKeyLen+1), apierr.InvalidAPIKey},
				{"a prefix of a valid key", dev[:len(dev)-1], apierr.InvalidAPIKey},
				{"valid", dev, ""},
			} {
				id, err := a.Authenticate(ctx, c.key)
				if got := code(err); got != c.want {
					t.Errorf("%s: %q, want %q", c.name, got, c.want)
				}
				if c.want == "" && (id.KeyID != devRow.ID || id.OwnerID != OwnerID("alice") || id.Environment != catalog.EnvDevelopment || id.Plan != "pro") {
					t.Errorf("identity %+v", id)
				}
			}
			// The same keys on a production gateway: only the production key passes.
			p, _ := New(st, Options{Environment: catalog.EnvProduction})
			if _, err := p.Authenticate(ctx, prod); err != nil {
				t.Errorf("production key on a production gateway: %v", err)
			}
			if got := code(func() error { _, err := p.Authenticate(ctx, dev); return err }()); got != apierr.InvalidAPIKey {
				t.Errorf("development key on a production gateway: %q", got)
			}
		})
	}
}

// TestCacheWindow shows what KEY_CACHE_TTL means: a revocation (or a new key) is seen once
// the cached lookup is older than the TTL, and not before.
func TestCacheWindow(t *testing.T) {
	t.Parallel()
	st := stores(t)["sqlite"](t)
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	a, err := New(st, Options{Environment: catalog.EnvDevelopment, CacheTTL: 5 * time.Second, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	key, row := newKey(t, st, catalog.EnvDevelopment, "carol")
	if _, err := a.Authenticate(ctx, key); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RevokeKey(ctx, row.Prefix, time.Now()); err != nil {
		t.Fatal(err)
	}
	clk.add(4 * time.Second)
	if _, err := a.Authenticate(ctx, key); err != nil {
		t.Errorf("within the TTL the cached lookup answers: %v", err)
	}
	clk.add(time.Second)
	if got := code(func() error { _, err := a.Authenticate(ctx, key); return err }()); got != apierr.InvalidAPIKey {
		t.Errorf("after the TTL a revoked key: %q", got)
	}

	// Negative entries are cached too, so a flood of bad keys costs one lookup each per TTL.
	nk, _ := Generate(catalog.EnvDevelopment)
	if code(func() error { _, err := a.Authenticate(ctx, nk.Secret); return err }()) != apierr.InvalidAPIKey {
		t.Fatal("unknown key accepted")
	}
	if _, err := st.CreateKey(ctx, catalog.APIKey{Prefix: nk.Prefix, Hash: nk.Hash, OwnerID: OwnerID("carol"), Environment: catalog.EnvDevelopment}); err != nil {
		t.Fatal(err)
	}
	if code(func() error { _, err := a.Authenticate(ctx, nk.Secret); return err }()) != apierr.InvalidAPIKey {
		t.Error("the negative entry should hold within the TTL")
	}
	clk.add(6 * time.Second)
	if _, err := a.Authenticate(ctx, nk.Secret); err != nil {
		t.Errorf("after the TTL the new key works: %v", err)
	}

	// TTL 0: no cache, a revocation is seen at once.
	b, _ := New(st, Options{Environment: catalog.EnvDevelopment})
	if _, err := b.Authenticate(ctx, nk.Secret); err != nil {
		t.Fatal(err)
	}
	if _, err := st.RevokeKey(ctx, nk.Prefix, time.Now()); err != nil {
		t.Fatal(err)
	}
	if code(func() error { _, err := b.Authenticate(ctx, nk.Secret); return err }()) != apierr.InvalidAPIKey {
		t.Error("without a cache a revocation must be seen at once")
	}
}

func TestCacheIsBounded(t *testing.T) {
	t.Parallel()
	st := stores(t)["sqlite"](t)
	a, _ := New(st, Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Hour, CacheSize: 8})
	for range 100 {
		nk, _ := Generate(catalog.EnvDevelopment)
		_, _ = a.Authenticate(context.Background(), nk.Secret)
	}
	n := a.cache.Len()
	if n > 8 {
		t.Errorf("cache holds %d entries, bound 8", n)
	}
}

func TestStoreFailureIsInternalAndNotCached(t *testing.T) {
	t.Parallel()
	st := stores(t)["sqlite"](t)
	key, _ := newKey(t, st, catalog.EnvDevelopment, "dave")
	a, _ := New(st, Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Hour})
	_ = st.Close()
	_, err := a.Authenticate(context.Background(), key)
	if err == nil || apierr.From(err).Code != apierr.Internal {
		t.Errorf("store down: %v, want an internal error", err)
	}
	n := a.cache.Len()
	if n != 0 {
		t.Errorf("a failed lookup was cached")
	}
}

func TestBootstrapDevelopment(t *testing.T) {
	t.Parallel()
	for name, open := range stores(t) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			st := open(t)
			ctx := context.Background()
			const first, second = "sg_dev_11111111111111111111111111111111", "sg_dev_22222222222222222222222222222222"
			for range 2 { // idempotent
				if err := BootstrapDevelopment(ctx, st, first); err != nil {
					t.Fatal(err)
				}
			}
			a, _ := New(st, Options{Environment: catalog.EnvDevelopment})
			id, err := a.Authenticate(ctx, first)
			if err != nil || id.OwnerID != DevOwnerID {
				t.Fatalf("development key: %+v %v", id, err)
			}
			ps, total, err := st.ListProjects(ctx, catalog.ProjectFilter{OwnerID: &DevOwnerID, ViewerID: DevOwnerID})
			if err != nil || total != 1 || ps[0].Slug != DevProjectSlug || ps[0].Visibility != catalog.VisibilityPrivate {
				t.Fatalf("development project: %+v %d %v", ps, total, err)
			}
			keys, _ := st.Keys(ctx)
			if len(keys) != 1 {
				t.Errorf("%d keys after two bootstraps, want 1", len(keys))
			}
			for _, k := range keys {
				if strings.Contains(string(k.Hash), first) || strings.Contains(k.Prefix, first[len("sg_dev_")+prefixHexChars:]) {
					t.Errorf("the key is stored beyond its hash and prefix: %+v", k)
				}
			}
			// A new DEV_API_KEY replaces the old one.
			if err := BootstrapDevelopment(ctx, st, second); err != nil {
				t.Fatal(err)
			}
			if _, err := a.Authenticate(ctx, second); err != nil {
				t.Errorf("new development key: %v", err)
			}
			if code(func() error { _, err := a.Authenticate(ctx, first); return err }()) != apierr.InvalidAPIKey {
				t.Errorf("the previous development key still works")
			}
		})
	}
}

func BenchmarkAuthenticateCached(b *testing.B) {
	st, err := store.Open(context.Background(), store.Config{SQLitePath: filepath.Join(b.TempDir(), "c.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	const key = "sg_dev_33333333333333333333333333333333"
	if err := BootstrapDevelopment(context.Background(), st, key); err != nil {
		b.Fatal(err)
	}
	a, _ := New(st, Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Hour})
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := a.Authenticate(context.Background(), key); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// A rotated key keeps working through its grace and stops at its expiry exactly, even while
// its lookup is cached (the expiry is checked against the clock, not the cache's age).
func TestRotatedKeyStopsAtExpiry(t *testing.T) {
	t.Parallel()
	st := stores(t)["sqlite"](t)
	ctx := context.Background()
	clk := &clock{t: time.Now().UTC()}
	a, err := New(st, Options{Environment: catalog.EnvDevelopment, CacheTTL: time.Minute, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	key, row := newKey(t, st, catalog.EnvDevelopment, "dora")
	nk, _ := Generate(catalog.EnvDevelopment)
	if _, _, err := st.RotateKey(ctx, row.ID, catalog.APIKey{Prefix: nk.Prefix, Hash: nk.Hash}, clk.now().Add(10*time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Authenticate(ctx, key); err != nil {
		t.Fatalf("within the grace the old key works: %v", err)
	}
	if _, err := a.Authenticate(ctx, nk.Secret); err != nil {
		t.Fatalf("the new key works: %v", err)
	}
	clk.add(10 * time.Second)
	if got := code(func() error { _, err := a.Authenticate(ctx, key); return err }()); got != apierr.InvalidAPIKey {
		t.Errorf("after the grace the old key: %q, want invalid_api_key", got)
	}
	if _, err := a.Authenticate(ctx, nk.Secret); err != nil {
		t.Errorf("the new key still works: %v", err)
	}
}
