package account

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

type meJSON struct {
	ID        uuid.UUID `json:"id"`
	Name      string    `json:"name"`
	Email     string    `json:"email"`
	Role      string    `json:"role"`
	CreatedAt string    `json:"created_at"`
}

func accountView(a store.Account) meJSON {
	return meJSON{ID: a.ID, Name: a.Name, Email: a.Email, Role: a.Role, CreatedAt: contract.FormatTime(a.CreatedAt)}
}

func (h *Handler) me(w http.ResponseWriter, _ *http.Request, a store.Account) {
	writeJSON(w, http.StatusOK, accountView(a))
}

// keyJSON is one key of GET /account/api/keys; Key is set only in the answer that
// creates it.
type keyJSON struct {
	ID               uuid.UUID `json:"id"`
	Name             string    `json:"name"`
	Prefix           string    `json:"prefix"`
	Environment      string    `json:"environment"`
	Plan             string    `json:"plan"`
	LimitPerHour     int64     `json:"limit_per_hour"`
	CreatedAt        string    `json:"created_at"`
	LastUsedAt       *string   `json:"last_used_at"`
	RequestsThisHour int64     `json:"requests_this_hour"`
	ExpiresAt        *string   `json:"expires_at"`
	RevokedAt        *string   `json:"revoked_at"`
	Scopes           []string  `json:"scopes"`
	Key              string    `json:"key,omitempty"`
}

func (h *Handler) keyView(k catalog.APIKey, thisHour int64) keyJSON {
	l := h.cfg.Plans.For(k.Environment, k.Plan)
	return keyJSON{
		ID: k.ID, Name: k.Name, Prefix: k.Prefix, Environment: k.Environment, Plan: k.Plan,
		LimitPerHour: perHour(l), CreatedAt: contract.FormatTime(k.CreatedAt), LastUsedAt: timePtr(k.LastUsedAt),
		RequestsThisHour: thisHour, ExpiresAt: timePtr(k.ExpiresAt), RevokedAt: timePtr(k.RevokedAt),
		Scopes: append([]string{}, auth.KeyScopes(k.Scopes).Names()...),
	}
}

func (h *Handler) listKeys(w http.ResponseWriter, r *http.Request, a store.Account) {
	all, err := h.st.KeysOf(r.Context(), a.ID)
	if err != nil {
		apierr.Write(w, storeErr("list keys", err))
		return
	}
	// The keys behind connected apps are listed under apps, not here.
	keys := all[:0]
	for _, k := range all {
		if k.ClientID == "" {
			keys = append(keys, k)
		}
	}
	counts := map[uuid.UUID]int64{}
	if h.cfg.ThisHour != nil && len(keys) > 0 {
		ids := make([]uuid.UUID, len(keys))
		for i, k := range keys {
			ids[i] = k.ID
		}
		if counts, err = h.cfg.ThisHour(r.Context(), ids); err != nil {
			// The list is still useful without this hour's counts; say so in the log.
			h.cfg.Logger.WarnContext(r.Context(), "account: requests this hour unavailable", "err", err)
			counts = map[uuid.UUID]int64{}
		}
	}
	out := struct {
		Keys []keyJSON `json:"keys"`
	}{Keys: make([]keyJSON, len(keys))}
	for i, k := range keys {
		out.Keys[i] = h.keyView(k, counts[k.ID])
	}
	writeJSON(w, http.StatusOK, out)
}

// maxKeyName bounds a key's label.
const maxKeyName = 100

func checkName(name string) error {
	if len(name) > maxKeyName {
		return apierr.Invalid("name", "at most %d bytes", maxKeyName)
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f {
			return apierr.Invalid("name", "the value contains a control character (%U)", r)
		}
	}
	return nil
}

func (h *Handler) createKey(w http.ResponseWriter, r *http.Request, a store.Account) {
	var body struct {
		Name        string    `json:"name"`
		Environment string    `json:"environment"`
		Scopes      *[]string `json:"scopes"`
	}
	if err := readJSON(r, &body); err != nil {
		apierr.Write(w, err)
		return
	}
	if err := checkName(body.Name); err != nil {
		apierr.Write(w, err)
		return
	}
	if body.Environment != catalog.EnvDevelopment && body.Environment != catalog.EnvProduction {
		apierr.Write(w, apierr.Invalid("environment", "want %s or %s, got %q", catalog.EnvDevelopment, catalog.EnvProduction, body.Environment))
		return
	}
	scopes := ""
	if body.Scopes != nil {
		s, err := auth.ParseScopes("scopes", strings.Join(*body.Scopes, " "))
		if err == nil && s == 0 {
			err = apierr.Invalid("scopes", "want at least one of %s (or leave scopes out for all)", strings.Join(auth.ScopeNames(), ", "))
		}
		if err != nil {
			apierr.Write(w, err)
			return
		}
		if s != auth.AllScopes {
			scopes = s.String()
		}
	}
	nk, err := auth.Generate(body.Environment)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	k, err := h.st.CreateKey(r.Context(), catalog.APIKey{Name: body.Name, Prefix: nk.Prefix, Hash: nk.Hash, OwnerID: a.ID, Environment: body.Environment, Scopes: scopes})
	if err != nil {
		apierr.Write(w, storeErr("create key", err))
		return
	}
	h.audit(r, a.ID.String(), "key.create", k.ID.String())
	v := h.keyView(k, 0)
	v.Key = nk.Secret
	writeJSON(w, http.StatusCreated, v)
}

// ownKey returns the key named by the path's id when it belongs to a (404 otherwise: a key
// of another account is not found, not forbidden).
func (h *Handler) ownKey(r *http.Request, a store.Account) (catalog.APIKey, error) {
	ref := r.PathValue("id")
	id, err := uuid.Parse(ref)
	if err != nil {
		return catalog.APIKey{}, apierr.Invalid("id", "want a key id (UUID), got %q", clip(ref))
	}
	k, err := h.st.Key(r.Context(), id)
	if errors.Is(err, catalog.ErrNotFound) || err == nil && (k.OwnerID != a.ID || k.ClientID != "") {
		// (an app's key is managed under /account/api/apps)
		return catalog.APIKey{}, apierr.New(apierr.NotFound, "key %s not found among your keys", id)
	}
	if err != nil {
		return catalog.APIKey{}, storeErr("key", err)
	}
	return k, nil
}

func (h *Handler) rotateKey(w http.ResponseWriter, r *http.Request, a store.Account) {
	k, err := h.ownKey(r, a)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	var body struct {
		Grace string `json:"grace"`
	}
	if err := readJSON(r, &body); err != nil {
		apierr.Write(w, err)
		return
	}
	grace, err := ParseGrace(body.Grace)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	nk, err := auth.Generate(k.Environment)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	name := k.Name
	old, next, err := h.st.RotateKey(r.Context(), k.ID, catalog.APIKey{Name: name, Prefix: nk.Prefix, Hash: nk.Hash}, h.cfg.Now().Add(grace))
	if errors.Is(err, catalog.ErrConflict) {
		apierr.Write(w, apierr.New(apierr.Conflict, "key %s is revoked or expired: create a new key instead", k.Prefix))
		return
	}
	if err != nil {
		apierr.Write(w, storeErr("rotate key", err))
		return
	}
	h.cfg.Forget()
	h.audit(r, a.ID.String(), "key.rotate", fmt.Sprintf("%s -> %s, old expires %s", old.ID, next.ID, contract.FormatTime(*old.ExpiresAt)))
	v := h.keyView(next, 0)
	v.Key = nk.Secret
	out := struct {
		keyJSON
		Replaces keyJSON `json:"replaces"`
	}{keyJSON: v, Replaces: h.keyView(old, 0)}
	writeJSON(w, http.StatusCreated, out)
}

func (h *Handler) revokeKey(w http.ResponseWriter, r *http.Request, a store.Account) {
	k, err := h.ownKey(r, a)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	h.revoke(w, r, a, k)
}

func (h *Handler) revoke(w http.ResponseWriter, r *http.Request, a store.Account, k catalog.APIKey) {
	if _, err := h.st.RevokeKey(r.Context(), k.ID.String(), h.cfg.Now()); err != nil {
		apierr.Write(w, storeErr("revoke key", err))
		return
	}
	// This replica refuses it at once; the others within KEY_CACHE_TTL.
	h.cfg.Forget()
	h.audit(r, a.ID.String(), "key.revoke", k.ID.String())
	w.WriteHeader(http.StatusNoContent)
}

// maxUsageDays is the retention of hourly usage.
const maxUsageDays = 90

func (h *Handler) keyUsage(w http.ResponseWriter, r *http.Request, a store.Account) {
	k, err := h.ownKey(r, a)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	days := 30
	if v := r.URL.Query().Get("days"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxUsageDays {
			apierr.Write(w, apierr.Invalid("days", "want a whole number from 1 to %d, got %q", maxUsageDays, clip(v)))
			return
		}
		days = n
	}
	now := h.cfg.Now().UTC()
	hours, err := h.st.Usage(r.Context(), k.ID, now.Truncate(time.Hour).Add(-time.Duration(days)*24*time.Hour))
	if err != nil {
		apierr.Write(w, storeErr("usage", err))
		return
	}
	type hourJSON struct {
		Hour     string `json:"hour"`
		Requests int64  `json:"requests"`
	}
	out := struct {
		Hours []hourJSON `json:"hours"`
	}{Hours: make([]hourJSON, 0, len(hours)+1)}
	cur := now.Truncate(time.Hour)
	var live int64
	if h.cfg.ThisHour != nil {
		if m, err := h.cfg.ThisHour(r.Context(), []uuid.UUID{k.ID}); err == nil {
			live = m[k.ID]
		}
	}
	seenCur := false
	for _, hc := range hours {
		n := hc.Requests
		if hc.Hour.Equal(cur) {
			// The catalog's copy of the current hour lags the shared counter.
			n, seenCur = max(n, live), true
		}
		out.Hours = append(out.Hours, hourJSON{Hour: contract.FormatTime(hc.Hour), Requests: n})
	}
	if !seenCur && live > 0 {
		out.Hours = append(out.Hours, hourJSON{Hour: contract.FormatTime(cur), Requests: live})
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *Handler) projects(w http.ResponseWriter, r *http.Request, a store.Account) {
	v, err := h.cfg.Projects(r.Context(), a.ID)
	if err != nil {
		apierr.Write(w, storeErr("projects", err))
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// isoDuration is the subset of ISO 8601 durations a grace takes: weeks, or days and a time
// of hours, minutes and (fractional) seconds. Years and months have no fixed length.
var isoDuration = regexp.MustCompile(`^P(?:(\d+)W|(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?)$`)

// ParseGrace parses a rotation's grace: an ISO 8601 duration from PT0S to P7D. The
// errors are 400 invalid_parameter naming grace.
func ParseGrace(s string) (time.Duration, error) {
	m := isoDuration.FindStringSubmatch(s)
	if s == "" || m == nil || s == "P" || strings.HasSuffix(s, "T") {
		return 0, apierr.Invalid("grace", "want an ISO 8601 duration up to P7D, like PT1H or P2D, got %q", clip(s))
	}
	var d time.Duration
	add := func(v string, unit time.Duration) {
		if v == "" {
			return
		}
		f, _ := strconv.ParseFloat(v, 64)
		if f > float64(MaxGrace/unit)+1 {
			f = float64(MaxGrace/unit) + 1 // anything this large is over the limit anyway
		}
		d += time.Duration(f * float64(unit))
	}
	add(m[1], 7*24*time.Hour)
	add(m[2], 24*time.Hour)
	add(m[3], time.Hour)
	add(m[4], time.Minute)
	add(m[5], time.Second)
	if d > MaxGrace {
		return 0, apierr.Invalid("grace", "at most P7D (7 days), got %q", clip(s))
	}
	return d, nil
}

// clip shortens a value echoed in an error message.
func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
