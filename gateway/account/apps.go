package account

import (
	"context"
	"net/http"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// Connected apps (OAuth clients, package oauth): each client an account approved holds a
// key of the account; revoking the app revokes that key and every token of it at once.

type appJSON struct {
	ClientID   string   `json:"client_id"`
	ClientName string   `json:"client_name"`
	Scopes     []string `json:"scopes"`
	CreatedAt  string   `json:"created_at"`
	LastUsedAt *string  `json:"last_used_at"`
}

func (h *Handler) listApps(w http.ResponseWriter, r *http.Request, a store.Account) {
	apps, err := h.st.Apps(r.Context(), a.ID)
	if err != nil {
		apierr.Write(w, storeErr("list apps", err))
		return
	}
	out := struct {
		Apps []appJSON `json:"apps"`
	}{Apps: make([]appJSON, len(apps))}
	for i, ap := range apps {
		out.Apps[i] = appJSON{ClientID: ap.Key.ClientID, ClientName: ap.ClientName, Scopes: append([]string{}, auth.KeyScopes(ap.Key.Scopes).Names()...),
			CreatedAt: contract.FormatTime(ap.Key.CreatedAt), LastUsedAt: timePtr(ap.Key.LastUsedAt)}
	}
	writeJSON(w, http.StatusOK, out)
}

// revokeApp revokes the account's access by a client: its key and all its tokens, refused
// here at once and on every other replica within KEY_CACHE_TTL.
func (h *Handler) revokeApp(w http.ResponseWriter, r *http.Request, a store.Account) {
	client := r.PathValue("client_id")
	keys, err := h.st.RevokeApp(r.Context(), a.ID, client, h.cfg.Now())
	if err != nil {
		apierr.Write(w, storeErr("revoke app", err))
		return
	}
	if len(keys) == 0 {
		apierr.Write(w, apierr.New(apierr.NotFound, "no connected app %q among yours", clip(client)))
		return
	}
	h.cfg.Forget()
	h.audit(r, a.ID.String(), "oauth.app_revoke", client)
	w.WriteHeader(http.StatusNoContent)
}

// The dashboard's side of package oauth (oauth.Sessions): the authorization endpoint runs
// inside the dashboard's sessions and protections, and signs people in through it.

// Protect wraps next in what every dashboard route has: no-store, the cross-origin check,
// the session, and a JSON body limit.
func (h *Handler) Protect(next http.Handler) http.Handler {
	return h.protect(next)
}

// Current is the session's signed-in account.
func (h *Handler) Current(r *http.Request) (store.Account, error) { return h.current(r) }

// GetString reads a session value.
func (h *Handler) GetString(ctx context.Context, key string) string {
	return h.sessions.GetString(ctx, key)
}

// PopString reads and removes a session value.
func (h *Handler) PopString(ctx context.Context, key string) string {
	return h.sessions.PopString(ctx, key)
}

// Put sets a session value.
func (h *Handler) Put(ctx context.Context, key string, v any) { h.sessions.Put(ctx, key, v) }

// SignInPage is the dashboard's page, where a person signs in.
func (h *Handler) SignInPage() string { return PathPage }

// Audit records an event in the audit log.
func (h *Handler) Audit(r *http.Request, actor, action, target string) {
	h.audit(r, actor, action, target)
}

// sessionNext is the session key (oauth.NextKey) of an authorization request to return to
// after signing in.
const sessionNext = "oauth_next"

// afterSignIn is where a sign-in continues: the authorization request that sent the
// person to sign in, else the dashboard. Only a path of the authorization endpoint is
// followed, so the value can never lead off the gateway.
func (h *Handler) afterSignIn(ctx context.Context) string {
	next := h.sessions.PopString(ctx, sessionNext)
	if len(next) > len(pathAuthorize)+1 && next[:len(pathAuthorize)+1] == pathAuthorize+"?" {
		return next
	}
	return PathPage
}

// pathAuthorize is oauth.PathAuthorize (kept here so that the dashboard does not depend on
// the authorization server).
const pathAuthorize = "/oauth/authorize"

// next tells the dashboard page, after a passkey sign-in, where to continue: the
// authorization request that sent the person to sign in (popped), or null.
func (h *Handler) next(w http.ResponseWriter, r *http.Request) {
	var next *string
	if _, err := h.current(r); err == nil {
		if n := h.afterSignIn(r.Context()); n != PathPage {
			next = &n
		}
	}
	writeJSON(w, http.StatusOK, struct {
		Next *string `json:"next"`
	}{next})
}
