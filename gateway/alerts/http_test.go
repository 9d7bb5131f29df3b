package alerts

import (
	"net/http"
	"strings"
	"testing"
)

type apiError struct {
	Error string `json:"error"`
	Code  string `json:"code"`
}

func TestRulesCRUDPerKey(t *testing.T) {
	eachDialect(t, func(t *testing.T, pg bool) {
		e := newAPI(t, pg, Quotas{"default": 5})
		alice, _ := e.key(t, "alice", "")
		bob, _ := e.key(t, "bob", "")
		body := map[string]any{"name": "pm2.5 near the school",
			"target":    map[string]any{"near": map[string]any{"lat": 48.85, "lon": 2.35, "radius_km": 10}},
			"condition": map[string]any{"parameter": "pm2_5_ug_per_m3", "op": "above", "value": 35},
			"for":       "PT1H", "webhook_url": "http://127.0.0.1:9/hook"}
		var got Created
		if code := e.call(t, alice, http.MethodPost, "/alerts/rules", body, &got); code != http.StatusCreated {
			t.Fatalf("create: %d", code)
		}
		if got.ID == "" || got.For != "PT3600S" || got.Condition.Op != OpAbove || got.Target.Near == nil || !strings.HasPrefix(got.WebhookSecret, "whsec_") {
			t.Fatalf("created %+v", got)
		}
		var one Created
		if code := e.call(t, alice, http.MethodGet, "/alerts/rules/"+got.ID, nil, &one); code != http.StatusOK || one.ID != got.ID || one.WebhookSecret != "" {
			t.Fatalf("get: %d %+v (the secret is shown once only)", code, one)
		}
		var list struct{ Rules []Rule }
		if code := e.call(t, alice, http.MethodGet, "/alerts/rules", nil, &list); code != http.StatusOK || len(list.Rules) != 1 {
			t.Fatalf("list: %d %+v", code, list)
		}
		// Another key sees none of it.
		var ae apiError
		if code := e.call(t, bob, http.MethodGet, "/alerts/rules/"+got.ID, nil, &ae); code != http.StatusNotFound || ae.Code != "not_found" {
			t.Fatalf("bob get: %d %+v", code, ae)
		}
		if code := e.call(t, bob, http.MethodDelete, "/alerts/rules/"+got.ID, nil, &ae); code != http.StatusNotFound {
			t.Fatalf("bob delete: %d", code)
		}
		if code := e.call(t, bob, http.MethodGet, "/alerts/rules", nil, &list); code != http.StatusOK || len(list.Rules) != 0 {
			t.Fatalf("bob list: %d %+v", code, list)
		}
		if code := e.call(t, alice, http.MethodDelete, "/alerts/rules/"+got.ID, nil, nil); code != http.StatusNoContent {
			t.Fatalf("delete: %d", code)
		}
		if code := e.call(t, alice, http.MethodGet, "/alerts/rules/"+got.ID, nil, &ae); code != http.StatusNotFound {
			t.Fatalf("get after delete: %d", code)
		}
	})
}

func TestBadRulesNameTheField(t *testing.T) {
	eachDialect(t, func(t *testing.T, pg bool) {
		e := newAPI(t, pg, Quotas{"default": 5})
		key, _ := e.key(t, "carol", "")
		ok := `"name":"n","target":{"sensor_ids":["5f0c7a52-3c4e-5a55-9d3b-1c5a0e2b7f11"]},"condition":{"parameter":"pm2_5_ug_per_m3","op":"above","value":1},"for":"PT0S"`
		for _, c := range []struct{ body, field string }{
			{`{` + strings.Replace(ok, `"name":"n"`, `"name":""`, 1) + `}`, `"name"`},
			{`{` + strings.Replace(ok, `"sensor_ids":["5f0c7a52-3c4e-5a55-9d3b-1c5a0e2b7f11"]`, `"sensor_ids":["x"]`, 1) + `}`, `"target.sensor_ids"`},
			{`{` + strings.Replace(ok, `{"sensor_ids":["5f0c7a52-3c4e-5a55-9d3b-1c5a0e2b7f11"]}`, `{}`, 1) + `}`, `"target"`},
			{`{` + strings.Replace(ok, `{"sensor_ids":["5f0c7a52-3c4e-5a55-9d3b-1c5a0e2b7f11"]}`, `{"bbox":{"min_lat":10,"max_lat":5,"min_lon":0,"max_lon":1}}`, 1) + `}`, `"target.bbox"`},
			{`{` + strings.Replace(ok, `{"sensor_ids":["5f0c7a52-3c4e-5a55-9d3b-1c5a0e2b7f11"]}`, `{"near":{"lat":1,"lon":1,"radius_km":0}}`, 1) + `}`, `"target.near.radius_km"`},
			{`{` + strings.Replace(ok, `"op":"above"`, `"op":"over"`, 1) + `}`, `"condition.op"`},
			{`{` + strings.Replace(ok, `"value":1`, `"min":1`, 1) + `}`, `"condition.value"`},
			{`{` + strings.Replace(ok, `"op":"above","value":1`, `"op":"outside","min":5,"max":1`, 1) + `}`, `"condition.min"`},
			{`{` + strings.Replace(ok, `"parameter":"pm2_5_ug_per_m3",`, ``, 1) + `}`, `"condition.parameter"`},
			{`{` + strings.Replace(ok, `"PT0S"`, `"1 hour"`, 1) + `}`, `"for"`},
			{`{` + strings.Replace(ok, `"PT0S"`, `"P1M"`, 1) + `}`, `"for"`},
			{`{` + ok + `,"webhook_url":"ftp://example.org/x"}`, `"webhook_url"`},
			{`{` + ok + `,"webhook_url":"http://10.0.0.1/x"}`, `"webhook_url"`},
			{`{` + ok + `,"webhook_url":"http://169.254.169.254/latest/meta-data"}`, `"webhook_url"`},
			{`{` + ok + `,"webhook_url":"http://[fd00::1]/x"}`, `"webhook_url"`},
			{`{` + ok + `,"colour":"red"}`, `"colour"`},
			{`{` + strings.Replace(ok, `"value":1`, `"value":"1"`, 1) + `}`, `"condition.value"`},
			{`[]`, `"body"`},
			{``, `"body"`},
		} {
			var ae apiError
			code := e.call(t, key, http.MethodPost, "/alerts/rules", c.body, &ae)
			if code != http.StatusBadRequest || ae.Code != "invalid_parameter" || !strings.Contains(ae.Error, c.field) {
				t.Errorf("%s: %d %+v, want 400 naming %s", c.body, code, ae, c.field)
			}
		}
		var ae apiError
		if code := e.call(t, key, http.MethodGet, "/alerts/events?limit=0", nil, &ae); code != http.StatusBadRequest || !strings.Contains(ae.Error, `"limit"`) {
			t.Errorf("limit=0: %d %+v", code, ae)
		}
		if code := e.call(t, key, http.MethodGet, "/alerts/events?since=yesterday", nil, &ae); code != http.StatusBadRequest || !strings.Contains(ae.Error, `"since"`) {
			t.Errorf("since=yesterday: %d %+v", code, ae)
		}
		if code := e.call(t, key, http.MethodGet, "/alerts/rules/nope", nil, &ae); code != http.StatusBadRequest || !strings.Contains(ae.Error, `"id"`) {
			t.Errorf("rule nope: %d %+v", code, ae)
		}
	})
}

func TestQuotaPerPlan(t *testing.T) {
	eachDialect(t, func(t *testing.T, pg bool) {
		e := newAPI(t, pg, Quotas{"free": 2, "default": 3})
		free, _ := e.key(t, "dave", "free")
		other, _ := e.key(t, "erin", "")
		body := `{"name":"n","target":{"project_id":"` + projectP + `"},"condition":{"op":"stale"},"for":"PT0S"}`
		for i := 0; i < 2; i++ {
			if code := e.call(t, free, http.MethodPost, "/alerts/rules", body, nil); code != http.StatusCreated {
				t.Fatalf("rule %d: %d", i, code)
			}
		}
		var ae apiError
		if code := e.call(t, free, http.MethodPost, "/alerts/rules", body, &ae); code != http.StatusForbidden || ae.Code != "forbidden" {
			t.Fatalf("third rule on free: %d %+v", code, ae)
		}
		for i := 0; i < 3; i++ {
			if code := e.call(t, other, http.MethodPost, "/alerts/rules", body, nil); code != http.StatusCreated {
				t.Fatalf("default plan rule %d: %d", i, code)
			}
		}
		if code := e.call(t, other, http.MethodPost, "/alerts/rules", body, &ae); code != http.StatusForbidden {
			t.Fatalf("fourth rule on default: %d", code)
		}
	})
}

func TestRotateSecretRoute(t *testing.T) {
	e := newAPI(t, true, Quotas{})
	key, _ := e.key(t, "hana", "")
	var r Created
	body := `{"name":"n","target":{"sensor_ids":["5f0c7a52-3c4e-5a55-9d3b-1c5a0e2b7f11"]},"condition":{"op":"stale"},"for":"PT0S","webhook_url":"http://127.0.0.1:9/x"}`
	if code := e.call(t, key, http.MethodPost, "/alerts/rules", body, &r); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	var out struct {
		WebhookSecret      string `json:"webhook_secret"`
		PreviousValidUntil string `json:"previous_valid_until"`
	}
	if code := e.call(t, key, http.MethodPost, "/alerts/rules/"+r.ID+"/rotate-secret", `{"grace":"PT1H"}`, &out); code != http.StatusCreated ||
		!strings.HasPrefix(out.WebhookSecret, "whsec_") || out.WebhookSecret == r.WebhookSecret || out.PreviousValidUntil == "" {
		t.Fatalf("rotate: %d %+v", code, out)
	}
	var ae apiError
	if code := e.call(t, key, http.MethodPost, "/alerts/rules/"+r.ID+"/rotate-secret", `{"grace":"P8D"}`, &ae); code != http.StatusBadRequest || !strings.Contains(ae.Error, `"grace"`) {
		t.Fatalf("grace P8D: %d %+v", code, ae)
	}
}
