package auth

import "context"

// Authenticate is authenticate for a caller whose address does not matter: the tests'
// way to present a key without a request.
func (a *Authenticator) Authenticate(ctx context.Context, secret string) (Identity, error) {
	return a.AuthenticateFrom(ctx, secret, "")
}

// AuthenticateFrom is authenticate for a caller at a client address (an IP), which the
// throttle counts wrong keys by, returning a copy of the identity.
func (a *Authenticator) AuthenticateFrom(ctx context.Context, secret, addr string) (Identity, error) {
	id, err := a.authenticate(ctx, secret, func() string { return addr })
	if err != nil {
		return Identity{}, err
	}
	return *id, nil
}
