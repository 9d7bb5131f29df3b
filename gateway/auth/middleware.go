package auth

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	"github.com/gin-gonic/gin"

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

// Middleware authenticates every request it guards. A refused request is aborted with the
// error recorded on the Gin context (c.Error), for the error middleware to render; an
// admitted one continues with its Identity in the request context.
func Middleware(a *Authenticator) gin.HandlerFunc {
	return func(c *gin.Context) {
		// The header is read under its canonical name: GetHeader would canonicalize
		// "x-api-key" into a new string on every request.
		id, err := a.authenticate(c.Request.Context(), headerValue(c.Request.Header, canonicalHeader), c.ClientIP)
		if err != nil {
			var te *ThrottledError
			if errors.As(err, &te) {
				c.Header("Retry-After", strconv.Itoa(te.Seconds()))
			}
			_ = c.Error(err)
			c.Abort()
			return
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
