package account

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/ratelimit"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// perHour is a limit in requests per hour, the unit the dashboard shows.
func perHour(l ratelimit.Limit) int64 {
	if l.Period <= 0 {
		return 0
	}
	return int64(float64(l.Rate) * float64(time.Hour) / float64(l.Period))
}

func (h *Handler) adminAccounts(w http.ResponseWriter, r *http.Request, _ store.Account) {
	as, err := h.st.Accounts(r.Context())
	if err != nil {
		apierr.Write(w, storeErr("accounts", err))
		return
	}
	type row struct {
		meJSON
		DisabledAt *string `json:"disabled_at"`
	}
	out := struct {
		Accounts []row `json:"accounts"`
	}{Accounts: make([]row, len(as))}
	for i, a := range as {
		out.Accounts[i] = row{meJSON: accountView(a), DisabledAt: timePtr(a.DisabledAt)}
	}
	writeJSON(w, http.StatusOK, out)
}

// EnrolTTL is how long an enrolment link (create-admin, invitation) stays valid.
const EnrolTTL = 7 * 24 * time.Hour

// SignInLinkTTL is how long a one-time sign-in link stays valid.
const SignInLinkTTL = 15 * time.Minute

// Links makes one-time links for the CLI and admins.
type Links struct {
	St     *store.Store
	Origin string
}

// Enrol stores a one-time enrolment token of an account and returns its link: the page
// at the link registers a passkey for the account and signs it in.
func (l Links) Enrol(ctx context.Context, account uuid.UUID) (string, error) {
	tok, err := l.token(ctx, store.TokenEnrol, account, EnrolTTL)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(l.Origin, "/") + PathPage + "#enrol=" + tok, nil
}

// SignIn stores a one-time sign-in token of an account and returns its link (GET signs in).
func (l Links) SignIn(ctx context.Context, account uuid.UUID) (string, error) {
	tok, err := l.token(ctx, store.TokenSignIn, account, SignInLinkTTL)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(l.Origin, "/") + "/account/auth/link?token=" + tok, nil
}

func (l Links) token(ctx context.Context, kind string, account uuid.UUID, ttl time.Duration) (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("account: random token: %w", err)
	}
	tok := base64.RawURLEncoding.EncodeToString(b)
	if err := l.St.CreateAccountToken(ctx, tokenHash(tok), kind, account, time.Now().Add(ttl)); err != nil {
		return "", err
	}
	return tok, nil
}

// tokenHash is the stored form of a one-time token: like keys, only its SHA-256.
func tokenHash(tok string) []byte {
	h := sha256.Sum256([]byte(tok))
	return h[:]
}

// adminInvite creates an account and answers with its enrolment link (shown once).
func (h *Handler) adminInvite(w http.ResponseWriter, r *http.Request, admin store.Account) {
	var body struct {
		Name  string `json:"name"`
		Email string `json:"email"`
		Role  string `json:"role"`
	}
	if err := readJSON(r, &body); err != nil {
		apierr.Write(w, err)
		return
	}
	if strings.TrimSpace(body.Name) == "" {
		apierr.Write(w, apierr.Invalid("name", "required: the person's name"))
		return
	}
	if err := checkName(body.Name); err != nil {
		apierr.Write(w, err)
		return
	}
	if body.Role == "" {
		body.Role = store.RoleUser
	}
	if body.Role != store.RoleUser && body.Role != store.RoleAdmin {
		apierr.Write(w, apierr.Invalid("role", "want user or admin, got %q", clip(body.Role)))
		return
	}
	if body.Email != "" && (!strings.Contains(body.Email, "@") || len(body.Email) > 254) {
		apierr.Write(w, apierr.Invalid("email", "want an email address, got %q", clip(body.Email)))
		return
	}
	a, err := h.st.CreateAccount(r.Context(), store.Account{Name: body.Name, Email: body.Email, Role: body.Role})
	if errors.Is(err, catalog.ErrConflict) {
		apierr.Write(w, apierr.New(apierr.Conflict, "an account with the email %q exists", clip(body.Email)))
		return
	}
	if err != nil {
		apierr.Write(w, storeErr("invite", err))
		return
	}
	link, err := Links{St: h.st, Origin: h.cfg.Origin}.Enrol(r.Context(), a.ID)
	if err != nil {
		apierr.Write(w, storeErr("invite", err))
		return
	}
	h.audit(r, admin.ID.String(), "account.invite", a.ID.String())
	writeJSON(w, http.StatusCreated, struct {
		Account   meJSON `json:"account"`
		EnrolLink string `json:"enrol_link"`
	}{accountView(a), link})
}

// adminUpdateAccount changes an account's role or disables it (its keys are revoked).
func (h *Handler) adminUpdateAccount(w http.ResponseWriter, r *http.Request, admin store.Account) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		apierr.Write(w, apierr.Invalid("id", "want an account id (UUID)"))
		return
	}
	var body struct {
		Role     *string `json:"role"`
		Disabled *bool   `json:"disabled"`
	}
	if err := readJSON(r, &body); err != nil {
		apierr.Write(w, err)
		return
	}
	a, err := h.st.Account(r.Context(), id)
	if errors.Is(err, catalog.ErrNotFound) {
		apierr.Write(w, apierr.New(apierr.NotFound, "account %s not found", id))
		return
	}
	if err != nil {
		apierr.Write(w, storeErr("account", err))
		return
	}
	role, disabled := a.Role, a.DisabledAt
	if body.Role != nil {
		if *body.Role != store.RoleUser && *body.Role != store.RoleAdmin {
			apierr.Write(w, apierr.Invalid("role", "want user or admin, got %q", clip(*body.Role)))
			return
		}
		role = *body.Role
	}
	if body.Disabled != nil {
		if !*body.Disabled {
			disabled = nil
		} else if disabled == nil {
			now := h.cfg.Now()
			disabled = &now
		}
	}
	if id == admin.ID && (role != store.RoleAdmin || disabled != nil) {
		apierr.Write(w, apierr.New(apierr.Conflict, "an admin cannot demote or disable their own account"))
		return
	}
	a, err = h.st.UpdateAccount(r.Context(), id, role, disabled)
	if err != nil {
		apierr.Write(w, storeErr("update account", err))
		return
	}
	if a.DisabledAt != nil {
		keys, err := h.st.KeysOf(r.Context(), a.ID)
		if err != nil {
			apierr.Write(w, storeErr("keys of disabled account", err))
			return
		}
		for _, k := range keys {
			if k.RevokedAt == nil {
				if _, err := h.st.RevokeKey(r.Context(), k.ID.String(), h.cfg.Now()); err != nil {
					apierr.Write(w, storeErr("revoke key", err))
					return
				}
			}
		}
		h.cfg.Forget()
	}
	h.audit(r, admin.ID.String(), "account.update", fmt.Sprintf("%s role=%s disabled=%t", a.ID, a.Role, a.DisabledAt != nil))
	writeJSON(w, http.StatusOK, accountView(a))
}

// adminPlans lists the rate-limit plans (RATE_LIMIT_PLANS: the limiter reads them from
// the configuration, so they are changed there; admins assign them to keys).
func (h *Handler) adminPlans(w http.ResponseWriter, _ *http.Request, _ store.Account) {
	type planJSON struct {
		Name         string `json:"name"`
		LimitPerHour int64  `json:"limit_per_hour"`
		Burst        int    `json:"burst"`
	}
	out := struct {
		Plans       []planJSON `json:"plans"`
		Development planJSON   `json:"development"`
	}{Plans: []planJSON{}}
	for name, l := range h.cfg.Plans {
		out.Plans = append(out.Plans, planJSON{Name: name, LimitPerHour: perHour(l), Burst: l.Burst})
	}
	sort.Slice(out.Plans, func(i, j int) bool { return out.Plans[i].Name < out.Plans[j].Name })
	dl := ratelimit.DevelopmentLimit()
	out.Development = planJSON{Name: "development", LimitPerHour: perHour(dl), Burst: dl.Burst}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) adminKey(w http.ResponseWriter, r *http.Request) (catalog.APIKey, bool) {
	id, err := uuid.Parse(r.PathValue("id"))
	if err != nil {
		apierr.Write(w, apierr.Invalid("id", "want a key id (UUID)"))
		return catalog.APIKey{}, false
	}
	k, err := h.st.Key(r.Context(), id)
	if errors.Is(err, catalog.ErrNotFound) {
		apierr.Write(w, apierr.New(apierr.NotFound, "key %s not found", id))
		return k, false
	}
	if err != nil {
		apierr.Write(w, storeErr("key", err))
		return k, false
	}
	return k, true
}

// adminSetPlan assigns a configured plan to a key.
func (h *Handler) adminSetPlan(w http.ResponseWriter, r *http.Request, admin store.Account) {
	k, ok := h.adminKey(w, r)
	if !ok {
		return
	}
	var body struct {
		Plan string `json:"plan"`
	}
	if err := readJSON(r, &body); err != nil {
		apierr.Write(w, err)
		return
	}
	if _, known := h.cfg.Plans[body.Plan]; !known && body.Plan != "" {
		apierr.Write(w, apierr.Invalid("plan", "%q is not one of the configured plans (GET /account/api/admin/plans)", clip(body.Plan)))
		return
	}
	k, err := h.st.SetKeyPlan(r.Context(), k.ID, body.Plan)
	if err != nil {
		apierr.Write(w, storeErr("set plan", err))
		return
	}
	h.cfg.Forget()
	h.audit(r, admin.ID.String(), "key.plan", k.ID.String()+" plan="+body.Plan)
	writeJSON(w, http.StatusOK, h.keyView(k, 0))
}

// adminRevokeKey revokes any account's key.
func (h *Handler) adminRevokeKey(w http.ResponseWriter, r *http.Request, admin store.Account) {
	if k, ok := h.adminKey(w, r); ok {
		h.revoke(w, r, admin, k)
	}
}

// auditPage is the page size of the audit log.
const auditPage = 100

func (h *Handler) adminAudit(w http.ResponseWriter, r *http.Request, _ store.Account) {
	cursor := r.URL.Query().Get("cursor")
	events, next, err := h.st.AuditEvents(r.Context(), cursor, auditPage)
	if errors.Is(err, catalog.ErrNotFound) {
		apierr.Write(w, apierr.Invalid("cursor", "not a cursor this API gave: %q", clip(cursor)))
		return
	}
	if err != nil {
		apierr.Write(w, storeErr("audit", err))
		return
	}
	type eventJSON struct {
		At      string `json:"at"`
		Actor   string `json:"actor"`
		Action  string `json:"action"`
		Target  string `json:"target"`
		Address string `json:"address"`
	}
	out := struct {
		Events     []eventJSON `json:"events"`
		NextCursor *string     `json:"next_cursor"`
	}{Events: make([]eventJSON, len(events))}
	for i, e := range events {
		out.Events[i] = eventJSON{At: timeString(e.At), Actor: e.Actor, Action: e.Action, Target: e.Target, Address: e.Address}
	}
	if next != "" {
		out.NextCursor = &next
	}
	writeJSON(w, http.StatusOK, out)
}

func timeString(t time.Time) string { return *timePtr(&t) }
