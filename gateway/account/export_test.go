package account

import (
	"context"
	"net/http"
)

// VerifyIDToken runs the callback's ID token checks (signature, issuer, expiry, audience
// clientID, nonce) on a raw token, for tests that hold a real one.
func VerifyIDToken(ctx context.Context, issuer, clientID, raw, nonce string) error {
	o := &oidcClient{cfg: OIDC{Issuer: issuer, ClientID: clientID, HTTPClient: http.DefaultClient}}
	p, err := o.discover(ctx)
	if err != nil {
		return err
	}
	_, err = o.verify(ctx, p, raw, nonce)
	return err
}
