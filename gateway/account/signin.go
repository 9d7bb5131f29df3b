package account

import (
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/gateway/store"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Sign-in throttle: an address, or an account, with more than signInMissLimit failed
// sign-ins within signInMissWindow gets 429 until the window ends.
const (
	signInMissLimit  = 10
	signInMissWindow = 15 * time.Minute
)

// Session keys of the ceremonies in progress.
const (
	sessionRegistration = "webauthn_registration"
	sessionLogin        = "webauthn_login"
)

// waUser is an account as go-webauthn sees it; the user handle is the account id.
type waUser struct {
	a     store.Account
	creds []webauthn.Credential
}

func (u waUser) WebAuthnID() []byte { b := u.a.ID; return b[:] }
func (u waUser) WebAuthnName() string {
	if u.a.Email != "" {
		return u.a.Email
	}
	return u.a.Name
}
func (u waUser) WebAuthnDisplayName() string                { return u.a.Name }
func (u waUser) WebAuthnCredentials() []webauthn.Credential { return u.creds }

func (h *Handler) user(r *http.Request, a store.Account) (waUser, error) {
	cs, err := h.st.Credentials(r.Context(), a.ID)
	if err != nil {
		return waUser{}, err
	}
	u := waUser{a: a}
	for _, c := range cs {
		var wc webauthn.Credential
		if err := json.Unmarshal([]byte(c.Data), &wc); err != nil {
			return waUser{}, fmt.Errorf("account: stored passkey of %s: %w", a.ID, err)
		}
		u.creds = append(u.creds, wc)
	}
	return u, nil
}

// registration is the state kept in the session between the two steps of enrolment.
type registration struct {
	Session   webauthn.SessionData `json:"session"`
	AccountID uuid.UUID            `json:"account_id"`
	// Token is the enrolment token (hex of its hash) of an invited account; empty for an
	// open sign-up, whose account is created at the end.
	TokenHash []byte `json:"token_hash,omitempty"`
	Name      string `json:"name,omitempty"`
}

// registerBegin starts a passkey enrolment: with an enrolment token (create-admin,
// invitation) for its account, or, when open sign-up is on, for a new account of the given
// name. The answer is the PublicKeyCredentialCreationOptions for navigator.credentials.create.
func (h *Handler) registerBegin(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Token string `json:"token"`
		Name  string `json:"name"`
	}
	if err := readJSON(r, &body); err != nil {
		apierr.Write(w, err)
		return
	}
	start := h.cfg.Now()
	reg := registration{}
	var a store.Account
	switch {
	case body.Token != "":
		if h.blocked(w, r, "") {
			return
		}
		th := tokenHash(body.Token)
		id, err := h.st.PeekAccountToken(r.Context(), th, store.TokenEnrol, h.cfg.Now())
		if err == nil {
			a, err = h.st.Account(r.Context(), id)
		}
		if err != nil {
			h.failSignIn(w, r, start, "", err)
			return
		}
		reg.AccountID, reg.TokenHash = a.ID, th
	case h.cfg.OpenSignUp:
		name := strings.TrimSpace(body.Name)
		if name == "" {
			apierr.Write(w, apierr.Invalid("name", "required for a new account: your name"))
			return
		}
		if err := checkName(name); err != nil {
			apierr.Write(w, err)
			return
		}
		a = store.Account{ID: uuid.New(), Name: name}
		reg.AccountID, reg.Name = a.ID, name
	default:
		apierr.Write(w, apierr.New(apierr.Forbidden, "sign-up is closed on this gateway: ask an admin for an invitation link"))
		return
	}
	u, err := h.user(r, a)
	if err != nil {
		apierr.Write(w, storeErr("passkeys", err))
		return
	}
	opts, sd, err := h.wa.BeginRegistration(u,
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired),
		webauthn.WithExclusions(webauthn.Credentials(u.creds).CredentialDescriptors()))
	if err != nil {
		apierr.Write(w, fmt.Errorf("account: begin registration: %w", err))
		return
	}
	reg.Session = *sd
	b, _ := json.Marshal(reg)
	h.sessions.Put(r.Context(), sessionRegistration, string(b))
	writeJSON(w, http.StatusOK, opts)
}

// registerFinish checks the new passkey, stores it (creating the account of an open
// sign-up, using up the enrolment token of an invitation) and signs the account in.
func (h *Handler) registerFinish(w http.ResponseWriter, r *http.Request) {
	start := h.cfg.Now()
	var reg registration
	if err := json.Unmarshal([]byte(h.sessions.PopString(r.Context(), sessionRegistration)), &reg); err != nil {
		h.failSignIn(w, r, start, "", errors.New("no registration in progress"))
		return
	}
	a := store.Account{ID: reg.AccountID, Name: reg.Name}
	if reg.TokenHash != nil {
		var err error
		if a, err = h.st.Account(r.Context(), reg.AccountID); err != nil {
			h.failSignIn(w, r, start, "", err)
			return
		}
	}
	u, err := h.user(r, a)
	if err != nil {
		apierr.Write(w, storeErr("passkeys", err))
		return
	}
	cred, err := h.wa.FinishRegistration(u, reg.Session, r)
	if err != nil {
		h.failSignIn(w, r, start, "", err)
		return
	}
	if reg.TokenHash != nil {
		if _, err := h.st.UseAccountToken(r.Context(), reg.TokenHash, store.TokenEnrol, h.cfg.Now()); err != nil {
			h.failSignIn(w, r, start, "", err)
			return
		}
	} else {
		if a, err = h.st.CreateAccount(r.Context(), store.Account{ID: a.ID, Name: a.Name}); err != nil {
			apierr.Write(w, storeErr("create account", err))
			return
		}
		h.audit(r, a.ID.String(), "account.signup", a.ID.String())
	}
	data, err := json.Marshal(cred)
	if err != nil {
		apierr.Write(w, fmt.Errorf("account: encode passkey: %w", err))
		return
	}
	if err := h.st.AddCredential(r.Context(), store.Credential{ID: cred.ID, AccountID: a.ID, Data: string(data)}); err != nil {
		apierr.Write(w, storeErr("add passkey", err))
		return
	}
	h.audit(r, a.ID.String(), "passkey.add", a.ID.String())
	if err := h.signIn(r, a, "passkey enrolment"); err != nil {
		apierr.Write(w, err)
		return
	}
	writeJSON(w, http.StatusOK, accountView(a))
}

// loginBegin starts a sign-in with a discoverable credential: no account is named, so the
// answer is the same for everyone.
func (h *Handler) loginBegin(w http.ResponseWriter, r *http.Request) {
	if h.blocked(w, r, "") {
		return
	}
	opts, sd, err := h.wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationPreferred))
	if err != nil {
		apierr.Write(w, fmt.Errorf("account: begin login: %w", err))
		return
	}
	b, _ := json.Marshal(sd)
	h.sessions.Put(r.Context(), sessionLogin, string(b))
	writeJSON(w, http.StatusOK, opts)
}

// loginFinish checks the assertion and signs its account in. Every failure (unknown
// passkey, unknown or disabled account, bad signature, no ceremony in progress) is the
// same 401 sign_in_failed, no sooner than SignInFloor after the request came in.
func (h *Handler) loginFinish(w http.ResponseWriter, r *http.Request) {
	start := h.cfg.Now()
	if h.blocked(w, r, "") {
		return
	}
	var sd webauthn.SessionData
	if err := json.Unmarshal([]byte(h.sessions.PopString(r.Context(), sessionLogin)), &sd); err != nil {
		h.failSignIn(w, r, start, "", errors.New("no sign-in in progress"))
		return
	}
	var found store.Account
	lookup := func(_, userHandle []byte) (webauthn.User, error) {
		id, err := uuid.FromBytes(userHandle)
		if err != nil {
			return nil, err
		}
		a, err := h.st.Account(r.Context(), id)
		if err != nil {
			return nil, err
		}
		if a.DisabledAt != nil {
			return nil, errors.New("account disabled")
		}
		found = a
		return h.user(r, a)
	}
	_, cred, err := h.wa.FinishPasskeyLogin(lookup, sd, r)
	acct := ""
	if found.ID != uuid.Nil {
		acct = found.ID.String()
		if h.blocked(w, r, acct) {
			return
		}
	}
	if err != nil {
		h.failSignIn(w, r, start, acct, err)
		return
	}
	if data, err := json.Marshal(cred); err == nil {
		if err := h.st.UpdateCredential(r.Context(), cred.ID, string(data), h.cfg.Now()); err != nil {
			h.cfg.Logger.WarnContext(r.Context(), "account: passkey counter not stored", "err", err)
		}
	}
	if err := h.signIn(r, found, "passkey"); err != nil {
		apierr.Write(w, err)
		return
	}
	writeJSON(w, http.StatusOK, accountView(found))
}

// signInLink signs in with a one-time link (make run's development account) and goes to
// the dashboard.
func (h *Handler) signInLink(w http.ResponseWriter, r *http.Request) {
	start := h.cfg.Now()
	if h.blocked(w, r, "") {
		return
	}
	tok := r.URL.Query().Get("token")
	id, err := h.st.UseAccountToken(r.Context(), tokenHash(tok), store.TokenSignIn, h.cfg.Now())
	var a store.Account
	if err == nil {
		a, err = h.st.Account(r.Context(), id)
	}
	if err == nil && a.DisabledAt != nil {
		err = errors.New("account disabled")
	}
	if err != nil {
		h.failSignIn(w, r, start, "", err)
		return
	}
	if err := h.signIn(r, a, "one-time link"); err != nil {
		apierr.Write(w, err)
		return
	}
	writeMovePage(w, h.afterSignIn(r.Context()), "Signed in. Continue")
}

// writeMovePage answers with a page that moves on to target by itself (a meta refresh: no
// script, so the dashboard's CSP holds) and links it, rather than a redirect: after a
// sign-in the answer is the signed-in page, and every route has a 200 to document.
func writeMovePage(w http.ResponseWriter, target, text string) {
	t := html.EscapeString(target)
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'")
	w.Header().Set("Referrer-Policy", "no-referrer") // tokens in this address stay out of Referer
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `<!doctype html><html lang="en"><head><meta charset="utf-8">`+
		`<meta http-equiv="refresh" content="0;url=`+t+`"><title>sensorgate</title></head>`+
		`<body><p><a href="`+t+`">`+html.EscapeString(text)+`</a>.</p></body></html>`)
}

// blocked answers 429 when the caller's address (or, with acct, that account) has used up
// its failed sign-ins.
func (h *Handler) blocked(w http.ResponseWriter, r *http.Request, acct string) bool {
	key := ClientAddr(r)
	if acct != "" {
		key = "account:" + acct
	}
	d, blocked := h.cfg.Throttle.Blocked(r.Context(), key)
	if !blocked {
		return false
	}
	te := &auth.ThrottledError{RetryAfter: d}
	w.Header().Set("Retry-After", strconv.Itoa(te.Seconds()))
	apierr.Write(w, apierr.New(apierr.RateLimited, "too many failed sign-ins; retry in %d s", te.Seconds()))
	return true
}

// failSignIn counts a failed sign-in against the address (and the account when known),
// logs why, and answers the one sign_in_failed, no sooner than SignInFloor after start.
func (h *Handler) failSignIn(w http.ResponseWriter, r *http.Request, start time.Time, acct string, why error) {
	h.cfg.Throttle.Miss(r.Context(), ClientAddr(r))
	if acct != "" {
		h.cfg.Throttle.Miss(r.Context(), "account:"+acct)
	}
	h.cfg.Logger.InfoContext(r.Context(), "account: sign-in failed", "address", ClientAddr(r), "reason", why)
	if wait := h.cfg.SignInFloor - h.cfg.Now().Sub(start); wait > 0 {
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
		}
	}
	apierr.Write(w, apierr.New(apierr.SignInFailed, "sign-in failed"))
}
