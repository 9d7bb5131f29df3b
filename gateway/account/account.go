// Package account is the account dashboard's server side (docs/accounts.md): people sign
// in (passkeys, one-time links), then manage their API keys per environment, see their
// usage and projects, and admins manage accounts and read the audit log, through the JSON
// API under /account/api/.
//
// Sessions are server-side (alexedwards/scs, in the catalog database); the cookie carries
// only a random token, renewed at every sign-in. Every state-changing request passes
// net/http's CrossOriginProtection. Keys are stored as SHA-256 only (package auth).
package account

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/outbound"
	"github.com/sensorgate/sensorgate/gateway/ratelimit"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
	"github.com/sensorgate/sensorgate/pkg/settings"
)

// Paths of the dashboard.
const (
	PathPage = "/account"
	PathAPI  = "/account/api/"
	PathAuth = "/account/auth/"
)

// maxBody bounds every JSON body of /account (a WebAuthn attestation is a few KiB).
const maxBody = 64 << 10

// MaxGrace is the longest a rotated key keeps working.
const MaxGrace = 7 * 24 * time.Hour

// Config is what the dashboard needs to run.
type Config struct {
	// Origin is the dashboard's public origin (https://gateway.example.org), the WebAuthn
	// relying party's origin; its host is the relying party id.
	Origin string
	// Environment is the gateway's (development or production).
	Environment string
	// OpenSignUp lets anyone create an account with a passkey (development default).
	OpenSignUp bool
	// Plans are the rate-limit plans, for each key's limit.
	Plans ratelimit.Plans
	// Throttle counts failed sign-ins per address and per account (nil: in process).
	Throttle auth.Throttle
	// ThisHour gives the requests of keys in the current hour (the shared usage counters).
	ThisHour func(ctx context.Context, ids []uuid.UUID) (map[uuid.UUID]int64, error)
	// Projects gives what /api/v1/projects/my gives for an owner (the api package's view).
	Projects func(ctx context.Context, owner uuid.UUID) (any, error)
	// OIDC, when its Issuer is set, adds sign-in with that OpenID Connect provider.
	OIDC OIDC
	// Page serves the dashboard's page at GET /account (package web: the explorer's
	// toolchain and CSP); nil answers 404 there.
	Page http.Handler
	// Forget drops this replica's cached key lookups after a revocation here.
	Forget func()
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// SignInFloor is the least time a failed sign-in takes to answer (default 250 ms), so
	// that timing tells nothing about which step failed.
	SignInFloor time.Duration
}

// Handler serves /account, /account/api/ and /account/auth/.
type Handler struct {
	cfg      Config
	st       *store.Store
	sessions *scs.SessionManager
	wa       *webauthn.WebAuthn
	h        http.Handler
	stop     func()
	oidc     *oidcClient // nil without OIDC.Issuer
}

// New builds the dashboard over the catalog store.
func New(st *store.Store, cfg Config) (*Handler, error) {
	u, err := url.Parse(cfg.Origin)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" && u.Path != "/" {
		return nil, fmt.Errorf("account: ACCOUNT_ORIGIN %q: want a scheme and host only, like https://gateway.example.org", cfg.Origin)
	}
	cfg.Origin = u.Scheme + "://" + u.Host
	if cfg.Projects == nil {
		return nil, errors.New("account: Config.Projects is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	settings.Default(&cfg.SignInFloor, 250*time.Millisecond)
	if cfg.Throttle == nil {
		cfg.Throttle = auth.NewMemoryThrottle(signInMissLimit, signInMissWindow, nil)
	}
	if cfg.Forget == nil {
		cfg.Forget = func() {}
	}
	wa, err := webauthn.New(&webauthn.Config{
		RPID:          u.Hostname(),
		RPDisplayName: "sensorgate",
		RPOrigins:     []string{cfg.Origin},
	})
	if err != nil {
		return nil, fmt.Errorf("account: webauthn: %w", err)
	}
	sessions, stop, err := newSessions(st.DB(), st.Postgres(), u.Scheme == "https")
	if err != nil {
		return nil, err
	}
	h := &Handler{cfg: cfg, st: st, sessions: sessions, wa: wa, stop: stop}
	if cfg.OIDC.Issuer != "" {
		if cfg.OIDC.ClientID == "" {
			return nil, errors.New("account: OIDC_CLIENT_ID is required with OIDC_ISSUER")
		}
		if cfg.OIDC.HTTPClient == nil {
			cfg.OIDC.HTTPClient = outbound.Client(10*time.Second, nil) // an outside party
		}
		h.oidc = &oidcClient{cfg: cfg.OIDC, origin: cfg.Origin}
	}
	sessions.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) {
		cfg.Logger.ErrorContext(r.Context(), "account: session store", "err", err)
		apierr.Write(w, catalog.UnavailableError("account: session", err))
	}
	h.h = h.routes()
	return h, nil
}

// methods tells the page which ways in this gateway offers.
func (h *Handler) methods(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Passkey    bool `json:"passkey"`
		OIDC       bool `json:"oidc"`
		OpenSignUp bool `json:"open_signup"`
	}{true, h.oidc != nil, h.cfg.OpenSignUp})
}

// Off answers every /account request of a gateway without ACCOUNT_ORIGIN: 404 not_found
// saying how to turn the dashboard on (the routes exist, the feature is off).
func Off() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		apierr.Write(w, apierr.New(apierr.NotFound, "the account dashboard is off on this gateway: its operator sets ACCOUNT_ORIGIN to turn it on"))
	})
}

// Close stops the session cleanup.
func (h *Handler) Close() { h.stop() }

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.h.ServeHTTP(w, r) }

// routes lists the dashboard's surface. The whole of it goes through the session loader
// and the cross-origin check (which lets GET, HEAD and OPTIONS through and refuses a
// cross-origin POST, PUT, PATCH or DELETE with 403).
func (h *Handler) routes() http.Handler {
	mux := http.NewServeMux()
	if h.cfg.Page != nil {
		mux.Handle("GET /account", h.cfg.Page)
	}
	// Signed in.
	mux.Handle("GET /account/api/me", h.signedIn(h.me))
	mux.Handle("GET /account/api/keys", h.signedIn(h.listKeys))
	mux.Handle("POST /account/api/keys", h.signedIn(h.createKey))
	mux.Handle("POST /account/api/keys/{id}/rotate", h.signedIn(h.rotateKey))
	mux.Handle("DELETE /account/api/keys/{id}", h.signedIn(h.revokeKey))
	mux.Handle("GET /account/api/keys/{id}/usage", h.signedIn(h.keyUsage))
	mux.Handle("GET /account/api/projects", h.signedIn(h.projects))
	mux.Handle("GET /account/api/apps", h.signedIn(h.listApps))
	mux.Handle("DELETE /account/api/apps/{client_id}", h.signedIn(h.revokeApp))
	// Admins.
	mux.Handle("GET /account/api/admin/accounts", h.admin(h.adminAccounts))
	mux.Handle("POST /account/api/admin/accounts", h.admin(h.adminInvite))
	mux.Handle("PATCH /account/api/admin/accounts/{id}", h.admin(h.adminUpdateAccount))
	mux.Handle("GET /account/api/admin/plans", h.admin(h.adminPlans))
	mux.Handle("PUT /account/api/admin/keys/{id}/plan", h.admin(h.adminSetPlan))
	mux.Handle("DELETE /account/api/admin/keys/{id}", h.admin(h.adminRevokeKey))
	mux.Handle("GET /account/api/admin/audit", h.admin(h.adminAudit))
	// Sign-in and out.
	mux.HandleFunc("POST /account/auth/passkey/register/begin", h.registerBegin)
	mux.HandleFunc("POST /account/auth/passkey/register/finish", h.registerFinish)
	mux.HandleFunc("POST /account/auth/passkey/login/begin", h.loginBegin)
	mux.HandleFunc("POST /account/auth/passkey/login/finish", h.loginFinish)
	mux.HandleFunc("GET /account/auth/link", h.signInLink)
	mux.HandleFunc("POST /account/auth/signout", h.signOut)
	mux.HandleFunc("GET /account/auth/methods", h.methods)
	mux.HandleFunc("GET /account/auth/next", h.next)
	if h.oidc != nil {
		mux.HandleFunc("GET /account/auth/oidc/start", h.oidcStart)
		mux.HandleFunc("GET "+PathOIDCCallback, h.oidcCallback)
	}

	return h.protect(envelopeErrors(mux))
}

// protect is what every dashboard route (and the OAuth consent page) goes through:
// no-store, the cross-origin check, the session, the body limit.
func (h *Handler) protect(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apierr.Write(w, apierr.New(apierr.Forbidden, "cross-origin %s refused: the dashboard only accepts changes from its own pages", r.Method))
	}))
	return noStore(cop.Handler(h.sessions.LoadAndSave(http.MaxBytesHandler(next, maxBody))))
}

// envelopeErrors answers what the mux itself refuses (no route: 404; a route without
// this method: 405 with Allow) in the one JSON error shape instead of its plain text.
func envelopeErrors(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, pattern := mux.Handler(r)
		if pattern != "" {
			mux.ServeHTTP(w, r) // (the mux sets the path values; Handler's h alone would not)
			return
		}
		rec := &statusOnly{header: http.Header{}}
		h.ServeHTTP(rec, r)
		if allow := rec.header.Get("Allow"); rec.status == http.StatusMethodNotAllowed {
			w.Header().Set("Allow", allow)
			apierr.Write(w, apierr.New(apierr.MethodNotAllowed, "method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allow))
			return
		}
		apierr.Write(w, apierr.New(apierr.NotFound, "no route %s %s", r.Method, r.URL.Path))
	})
}

// statusOnly keeps the status and headers of the mux's own error answer, not its body.
type statusOnly struct {
	header http.Header
	status int
}

func (s *statusOnly) Header() http.Header         { return s.header }
func (s *statusOnly) Write(b []byte) (int, error) { return len(b), nil }
func (s *statusOnly) WriteHeader(code int)        { s.status = code }

// noStore keeps every dashboard answer out of shared caches.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// sessionAccount is the session key of the signed-in account's id.
const sessionAccount = "account_id"

type accountHandler func(w http.ResponseWriter, r *http.Request, a store.Account)

// signedIn runs next for the session's account: 401 not_signed_in without one (or when the
// account was disabled since).
func (h *Handler) signedIn(next accountHandler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, err := h.current(r)
		if err != nil {
			apierr.Write(w, err)
			return
		}
		next(w, r, a)
	})
}

// admin is signedIn for admins only: 403 forbidden for other accounts.
func (h *Handler) admin(next accountHandler) http.Handler {
	return h.signedIn(func(w http.ResponseWriter, r *http.Request, a store.Account) {
		if a.Role != store.RoleAdmin {
			apierr.Write(w, apierr.New(apierr.Forbidden, "this route is for admins; your account's role is %s", a.Role))
			return
		}
		next(w, r, a)
	})
}

func (h *Handler) current(r *http.Request) (store.Account, error) {
	id, err := uuid.Parse(h.sessions.GetString(r.Context(), sessionAccount))
	if err != nil {
		return store.Account{}, notSignedIn()
	}
	a, err := h.st.Account(r.Context(), id)
	if errors.Is(err, catalog.ErrNotFound) || err == nil && a.DisabledAt != nil {
		return store.Account{}, notSignedIn()
	}
	if err != nil {
		return store.Account{}, storeErr("account", err)
	}
	return a, nil
}

func notSignedIn() *apierr.Error {
	return apierr.New(apierr.NotSignedIn, "not signed in: sign in at %s", PathPage)
}

// signIn starts an authenticated session for a: the session token is renewed first, so a
// token planted before sign-in (session fixation) never becomes an authenticated one.
func (h *Handler) signIn(r *http.Request, a store.Account, how string) error {
	if err := h.sessions.RenewToken(r.Context()); err != nil {
		return fmt.Errorf("account: renew session: %w", err)
	}
	h.sessions.Put(r.Context(), sessionAccount, a.ID.String())
	h.audit(r, a.ID.String(), "account.signin", how)
	return nil
}

func (h *Handler) signOut(w http.ResponseWriter, r *http.Request) {
	if a, err := h.current(r); err == nil {
		h.audit(r, a.ID.String(), "account.signout", "")
	}
	if err := h.sessions.Destroy(r.Context()); err != nil {
		apierr.Write(w, fmt.Errorf("account: sign out: %w", err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// audit records an event; a failure is logged, not returned: the action itself happened.
func (h *Handler) audit(r *http.Request, actor, action, target string) {
	err := h.st.AddAudit(context.WithoutCancel(r.Context()), store.AuditEvent{At: h.cfg.Now(), Actor: actor, Action: action, Target: target, Address: ClientAddr(r)})
	if err != nil {
		h.cfg.Logger.ErrorContext(r.Context(), "account: audit event lost", "action", action, "target", target, "err", err)
	}
}

type clientAddrKey struct{}

// WithClientAddr records the caller's address as the router derived it (behind trusted
// proxies, the forwarded one).
func WithClientAddr(ctx context.Context, addr string) context.Context {
	return context.WithValue(ctx, clientAddrKey{}, addr)
}

// ClientAddr is the caller's IP: the router's (WithClientAddr), else the peer's.
func ClientAddr(r *http.Request) string {
	if a, ok := r.Context().Value(clientAddrKey{}).(string); ok && a != "" {
		return a
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// readJSON decodes a JSON object body strictly: unknown fields and trailing data are 400s.
func readJSON(r *http.Request, dst any) error {
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		return apierr.New(apierr.UnsupportedMediaType, "send the body as application/json, not %s", ct)
	}
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apierr.New(apierr.PayloadTooLarge, "the body is larger than %d bytes", maxBody)
		}
		if errors.Is(err, io.EOF) {
			return apierr.Invalid("body", "want a JSON object")
		}
		return apierr.Invalid("body", "not the JSON object this route takes: %v", err)
	}
	if dec.More() {
		return apierr.Invalid("body", "trailing data after the JSON object")
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// storeErr keeps a store outage a 503 and everything else an internal error.
func storeErr(what string, err error) error {
	if catalog.Unavailable(err) {
		return catalog.UnavailableError("account: "+what, err)
	}
	return fmt.Errorf("account: %s: %w", what, err)
}

// timePtr is an optional time in the API's one format (contract.FormatTime), or null.
func timePtr(t *time.Time) *string {
	if t == nil {
		return nil
	}
	s := contract.FormatTime(*t)
	return &s
}
