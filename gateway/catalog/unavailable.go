package catalog

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Unavailable reports whether err means the catalog database cannot answer right now (down,
// restarting, unreachable, out of connections, or slower than the query deadline) as
// opposed to a bug or a bad argument. Callers answer it with 503 store_unavailable and
// Retry-After instead of 500: the request is fine and will succeed once the database is
// back. It reads the error through interfaces only, so the catalog does not depend on a
// driver.
func Unavailable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrConflict) {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return true
	}
	// PostgreSQL's own codes (pgconn.PgError has SQLState): class 08 connection
	// exception, 53 insufficient resources (too many connections), 57P01-57P03 the server
	// shutting down or starting up.
	var pe interface{ SQLState() string }
	if errors.As(err, &pe) {
		c := pe.SQLState()
		return strings.HasPrefix(c, "08") || strings.HasPrefix(c, "53") || c == "57P01" || c == "57P02" || c == "57P03"
	}
	// pgx marks errors after which nothing reached the server (a failed connect, a closed
	// connection) as safe to retry.
	var sr interface{ SafeToRetry() bool }
	if errors.As(err, &sr) && sr.SafeToRetry() {
		return true
	}
	return false
}

// UnavailableError is the answer to a catalog database that cannot answer (Unavailable):
// apierr's 503 store_unavailable with Retry-After for the client (errors.As finds it), its
// cause kept for errors.Is and the log, never shown.
func UnavailableError(what string, err error) error {
	return &unavailableError{what: what, err: err}
}

type unavailableError struct {
	what string
	err  error
}

var errUnavailable = apierr.New(apierr.StoreUnavailable, "the catalog database is unavailable; retry shortly")

func (e *unavailableError) Error() string { return e.what + ": store unavailable: " + e.err.Error() }

// Unwrap gives errors.As the client-facing *apierr.Error and errors.Is the cause.
func (e *unavailableError) Unwrap() []error { return []error{errUnavailable, e.err} }

// StoreError maps what the store returned: client errors pass through, a database that
// cannot answer is 503 store_unavailable (catalog.UnavailableError), anything else is internal (logged
// whole by ginerr.Render).
func StoreError(what string, err error) error {
	var e *apierr.Error
	if errors.As(err, &e) {
		return e
	}
	if Unavailable(err) {
		return UnavailableError(what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
