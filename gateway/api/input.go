package api

import (
	"github.com/gin-gonic/gin"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// checkInput refuses, before any handler or store call, a request whose query or path
// parameters break CheckRawQuery's rules or CheckText: a 400 naming the parameter.
func checkInput() gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := sensorquery.CheckRawQuery(c.Request.URL.RawQuery); err != nil {
			fail(c, err)
			return
		}
		for _, p := range c.Params {
			if len(p.Value) > sensorquery.MaxPathParam {
				fail(c, apierr.Invalid(p.Key, "want at most %d bytes, got %d", sensorquery.MaxPathParam, len(p.Value)))
				return
			}
			if err := sensorquery.CheckText(p.Key, p.Value); err != nil {
				fail(c, err)
				return
			}
		}
		c.Next()
	}
}
