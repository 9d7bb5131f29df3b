package auth

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

type identityKey struct{}

// FromContext returns the identity the middleware established for the request. The
// context holds the authenticator's shared identity; callers get a copy, so it stays
// unmodified.
func FromContext(ctx context.Context) (Identity, bool) {
	if id, ok := obs.Principal(ctx).(*Identity); ok {
		return *id, true
	}
	id, ok := ctx.Value(identityKey{}).(*Identity)
	if !ok {
		return Identity{}, false
	}
	return *id, true
}

// FromGin returns the identity of a Gin request.
func FromGin(c *gin.Context) (Identity, bool) { return FromContext(c.Request.Context()) }

// Caller is the identity of a request on an authenticated route; its absence is the
// gateway's own fault (a route mounted without the middleware), an internal error.
func Caller(c *gin.Context) (Identity, error) {
	id, ok := FromGin(c)
	if !ok {
		return id, errors.New("auth: no identity on an authenticated route")
	}
	return id, nil
}

// canonicalHeader is Header in net/http's canonical form, the key requests hold it under.
var canonicalHeader = http.CanonicalHeaderKey(Header)

func headerValue(h http.Header, canonical string) string {
	if v := h[canonical]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// WellKnownResource is the path of the protected resource metadata (RFC 9728); a
// resource's own document is at this path followed by the resource's path.
const WellKnownResource = "/.well-known/oauth-protected-resource"

// canonicalAuthorization is the Authorization header's canonical name.
var canonicalAuthorization = http.CanonicalHeaderKey("Authorization")

// credential is the request's key or token: x-api-key, else the value of
// "Authorization: Bearer" (RFC 6750; the scheme case-insensitive). bearer says which.
func credential(h http.Header) (secret string, bearer bool) {
	if v := headerValue(h, canonicalHeader); v != "" {
		return v, false
	}
	v := headerValue(h, canonicalAuthorization)
	if len(v) > 7 && strings.EqualFold(v[:7], "bearer ") {
		return strings.TrimSpace(v[7:]), true
	}
	return "", false
}

// Middleware authenticates every request it guards: an API key in x-api-key, or a key or
// an OAuth access token as "Authorization: Bearer". A refused request is aborted with the
// error recorded on the Gin context (c.Error), for the error middleware to render; a 401
// carries WWW-Authenticate naming the resource metadata (RFC 9728), so an OAuth client
// finds where to sign in from the refusal alone. An admitted request continues with its
// Identity in the request context, once its audience (a token's) and scope match the
// route: a token issued for another resource is 401 invalid_token, a missing scope 403
// insufficient_scope.
func Middleware(a *Authenticator) gin.HandlerFunc {
	return func(c *gin.Context) {
		// The header is read under its canonical name: GetHeader would canonicalize
		// "x-api-key" into a new string on every request.
		secret, bearer := credential(c.Request.Header)
		id, err := a.authenticate(c.Request.Context(), secret, c.ClientIP)
		if err != nil {
			var te *ThrottledError
			if errors.As(err, &te) {
				c.Header("Retry-After", strconv.Itoa(te.Seconds()))
			}
			var ae *apierr.Error
			if errors.As(err, &ae) && ae.Status() == http.StatusUnauthorized {
				if bearer && !IsKey(secret) {
					err = apierr.New(apierr.InvalidToken, "invalid access token: it is unknown, expired or revoked; sign in again")
				}
				a.challengeHeader(c, secret != "")
			}
			_ = c.Error(err)
			c.Abort()
			return
		}
		if id.Audience != "" && !underPath(c.Request.URL.Path, id.Audience) {
			a.challengeHeader(c, true)
			_ = c.Error(apierr.New(apierr.InvalidToken, "this access token was issued for the resource %s, not for %s", id.Audience, c.Request.URL.Path))
			c.Abort()
			return
		}
		if id.Scopes != AllScopes {
			if need := RouteScope(c.FullPath()); !id.Allows(need) {
				c.Header("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+need.String()+`"`)
				_ = c.Error(apierr.New(apierr.InsufficientScope, "this route needs the scope %s, which this credential does not carry (it has: %s)", need, scopeList(id.Scopes)))
				c.Abort()
				return
			}
		}
		obs.SetKeyID(c.Request.Context(), id.KeyIDText)
		// The shared identity goes in as a pointer: boxing the struct would copy it to the
		// heap on every request. Within obs.Middleware it goes in the request's own slot;
		// only without it (a test's bare router) is the request copied with a context of
		// its own, which cost a request copy and a context on every call (docs/speed.md).
		if !obs.SetPrincipal(c.Request.Context(), id) {
			c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), identityKey{}, id))
		}
		c.Next()
	}
}

// challengeHeader sets WWW-Authenticate on a 401: the resource metadata of the path asked,
// and error="invalid_token" when a credential was presented (RFC 6750 3.1).
func (a *Authenticator) challengeHeader(c *gin.Context, presented bool) {
	if a.challenge == "" {
		return
	}
	v := a.challenge + c.Request.URL.Path + `"`
	if presented {
		v += `, error="invalid_token"`
	}
	c.Header("WWW-Authenticate", v)
}

// underPath reports whether path is the audience path or below it.
func underPath(path, audience string) bool {
	audience = strings.TrimRight(audience, "/")
	return audience == "" || path == audience || strings.HasPrefix(path, audience+"/")
}

func scopeList(s Scope) string {
	if s == 0 {
		return "none"
	}
	return s.String()
}
