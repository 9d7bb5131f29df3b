package obs

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/gin-gonic/gin"

	shared "github.com/sensorgate/sensorgate/pkg/obs"
)

func TestRouteTemplateReachesMetrics(t *testing.T) {
	t.Parallel()
	gin.SetMode(gin.ReleaseMode)
	reg, err := shared.NewRegistry()
	if err != nil {
		t.Fatal(err)
	}
	m, err := shared.NewMetrics(reg, "gateway")
	if err != nil {
		t.Fatal(err)
	}
	r := gin.New()
	r.Use(Route())
	r.GET("/api/v1/sensors/:id", func(c *gin.Context) { c.Status(http.StatusOK) })
	h := shared.Middleware(r, shared.HTTPOptions{Metrics: m})
	for _, p := range []string{"/api/v1/sensors/41002", "/api/v1/sensors/TPLM2", "/api/v1/unknown/thing"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", p, nil))
	}
	rec := httptest.NewRecorder()
	shared.MetricsHandler(reg).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, want := range []string{
		`sensorgate_http_request_duration_seconds_count{component="gateway",method="GET",route="/api/v1/sensors/:id",status="200"} 2`,
		`sensorgate_http_request_duration_seconds_count{component="gateway",method="GET",route="unmatched",status="404"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	for _, raw := range []string{"41002", "TPLM2", "/api/v1/unknown"} {
		if strings.Contains(body, raw) {
			t.Errorf("a raw path fragment %q became a label", raw)
		}
	}
}
