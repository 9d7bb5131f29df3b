// Package ginerr is the gateway's one error path on Gin: a handler records its error with
// Fail, and Render, the last middleware before the handlers, writes it once as the API's
// {"error", "code"} envelope (pkg/apierr).
package ginerr

import (
	"log/slog"

	"github.com/gin-gonic/gin"

	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/obs"
)

// Fail records err for Render and stops the chain.
func Fail(c *gin.Context, err error) {
	_ = c.Error(err)
	c.Abort()
}

// Render is the one place errors become responses: the last error recorded with c.Error
// is written as {"error", "code"} with its status. Errors that are not *apierr.Error are
// internal: logged whole, answered with a message that reveals nothing.
func Render(log *slog.Logger) gin.HandlerFunc {
	return func(c *gin.Context) {
		c.Next()
		if len(c.Errors) == 0 {
			return
		}
		err := c.Errors.Last().Err
		e := apierr.From(err)
		switch e.Code {
		case apierr.Internal:
			log.ErrorContext(c.Request.Context(), "internal error", "request_id", obs.RequestID(c.Request.Context()),
				"route", c.FullPath(), "err", err)
		case apierr.StoreUnavailable:
			log.WarnContext(c.Request.Context(), "catalog database unavailable", "request_id", obs.RequestID(c.Request.Context()),
				"route", c.FullPath(), "err", err)
		}
		if c.Writer.Written() {
			return // a handler already started its answer; the log line is all we can do
		}
		apierr.Write(c.Writer, e) // the one error writer: envelope, no-store, Retry-After
	}
}
