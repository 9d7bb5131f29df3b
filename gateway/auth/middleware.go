package auth

import (
	"context"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/pkg/obs"
)

type identityKey struct{}

// WithIdentity returns ctx carrying the caller's identity.
func WithIdentity(ctx context.Context, id Identity) context.Context {
	return context.WithValue(ctx, identityKey{}, id)
}

// FromContext returns the identity the middleware established for the request.
func FromContext(ctx context.Context) (Identity, bool) {
	switch id := ctx.Value(identityKey{}).(type) {
	case *Identity:
		return *id, true
	case Identity:
		return id, true
	}
	return Identity{}, false
}

// FromGin returns the identity of a Gin request.
func FromGin(c *gin.Context) (Identity, bool) { return FromContext(c.Request.Context()) }

// Middleware authenticates every request it guards. A refused request is aborted with the
// error recorded on the Gin context (c.Error), for the error middleware to render; an
// admitted one continues with its Identity in the request context.
func Middleware(a *Authenticator) gin.HandlerFunc {
	return func(c *gin.Context) {
		id, err := a.authenticate(c.Request.Context(), c.GetHeader(Header))
		if err != nil {
			_ = c.Error(err)
			c.Abort()
			return
		}
		obs.SetKeyID(c.Request.Context(), id.KeyIDText)
		// The shared identity goes in as a pointer: boxing the struct would copy it to the
		// heap on every request. FromContext hands out copies, so it stays unmodified.
		c.Request = c.Request.WithContext(context.WithValue(c.Request.Context(), identityKey{}, id))
		c.Next()
	}
}
