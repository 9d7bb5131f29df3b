// Package obs connects the gateway's Gin router to the shared observability of pkg/obs:
// Gin knows the route template of a request only inside the router, so a middleware there
// hands it to the outer HTTP middleware for metrics labels, span names and the access log.
package obs

import (
	"github.com/gin-gonic/gin"

	shared "github.com/sensorgate/sensorgate/pkg/obs"
)

// Route records the Gin route template (e.g. "/api/v1/sensors/:id") of every request for
// the enclosing shared.Middleware. Requests that match no route keep an empty template and
// are labelled "unmatched", never with their raw path. Install it first: router.Use(Route()).
func Route() gin.HandlerFunc {
	return func(c *gin.Context) {
		shared.SetRoute(c.Request.Context(), c.FullPath())
		c.Next()
	}
}
