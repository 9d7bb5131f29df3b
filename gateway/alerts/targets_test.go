package alerts

import (
	"net/http"
	"strings"
	"testing"
)

// TestRulesRefuseWhatCanNeverFire: at creation a rule's sensors are resolved (UUID or
// external id, stored by UUID), its parameter must be canonical, its project must exist
// and be visible to the key, and for is at most P7D (docs/alerts.md).
func TestRulesRefuseWhatCanNeverFire(t *testing.T) {
	eachDialect(t, func(t *testing.T, pg bool) {
		e := newAPI(t, pg, Quotas{"default": 50})
		alice, _ := e.key(t, "alice", "")
		bob, _ := e.key(t, "bob", "")
		rule := func(target, cond, holdFor string) string {
			if cond == "" {
				cond = `{"parameter":"pm2_5_ug_per_m3","op":"above","value":35}`
			}
			return `{"name":"n","target":` + target + `,"condition":` + cond + `,"for":"` + holdFor + `"}`
		}

		// An external id is taken as every REST route takes it, and stored by its UUID; a
		// sensor named twice (UUID and external id) is watched once.
		var got Created
		if code := e.call(t, bob, http.MethodPost, "/alerts/rules", rule(`{"sensor_ids":["AQ-1","`+sensorB+`","`+sensorA+`"]}`, "", "PT0S"), &got); code != http.StatusCreated {
			t.Fatalf("external id: %d", code)
		}
		if ids := got.Target.SensorIDs; len(ids) != 2 || ids[0] != sensorA || ids[1] != sensorB {
			t.Fatalf("stored sensor_ids %v, want [%s %s]", ids, sensorA, sensorB)
		}
		var again Rule
		if code := e.call(t, bob, http.MethodGet, "/alerts/rules/"+got.ID, nil, &again); code != http.StatusOK || len(again.Target.SensorIDs) != 2 || again.Target.SensorIDs[0] != sensorA {
			t.Fatalf("GET the rule: %d %+v", code, again.Target)
		}

		for _, c := range []struct {
			name, body, field, item string
		}{
			{"unknown external id", rule(`{"sensor_ids":["AQ-1","NOPE-9"]}`, "", "PT0S"), `"target.sensor_ids"`, `item 1 ("NOPE-9")`},
			{"unknown UUID", rule(`{"sensor_ids":["0b7a1c2d-3e4f-5a6b-8c7d-9e0f1a2b3c4d"]}`, "", "PT0S"), `"target.sensor_ids"`, `"0b7a1c2d-3e4f-5a6b-8c7d-9e0f1a2b3c4d"`},
			{"empty item", rule(`{"sensor_ids":[" "]}`, "", "PT0S"), `"target.sensor_ids"`, `item 0`},
			{"no such parameter", rule(`{"sensor_ids":["AQ-1"]}`, `{"parameter":"air_temp_c","op":"above","value":1}`, "PT0S"), `"condition.parameter"`, `"air_temp_c"`},
			{"parameter by another name", rule(`{"sensor_ids":["AQ-1"]}`, `{"parameter":"pm25","op":"above","value":1}`, "PT0S"), `"condition.parameter"`, `"pm25"`},
			{"for past a week", rule(`{"sensor_ids":["AQ-1"]}`, "", "P400D"), `"for"`, `P7D`},
			{"for a day past a week", rule(`{"sensor_ids":["AQ-1"]}`, "", "P8D"), `"for"`, `P7D`},
		} {
			var ae apiError
			code := e.call(t, bob, http.MethodPost, "/alerts/rules", c.body, &ae)
			if code != http.StatusBadRequest || ae.Code != "invalid_parameter" || !strings.Contains(ae.Error, c.field) || !strings.Contains(ae.Error, c.item) {
				t.Errorf("%s: %d %+v, want 400 naming %s and %s", c.name, code, ae, c.field, c.item)
			}
		}
		if code := e.call(t, bob, http.MethodPost, "/alerts/rules", rule(`{"sensor_ids":["AQ-2"]}`, "", "P7D"), nil); code != http.StatusCreated {
			t.Errorf("for P7D: %d, want 201", code)
		}

		// A project that does not exist and another owner's private one get the same 404.
		notFound := func(key, project string) {
			t.Helper()
			var ae apiError
			code := e.call(t, key, http.MethodPost, "/alerts/rules", rule(`{"project_id":"`+project+`"}`, `{"op":"stale"}`, "PT0S"), &ae)
			if code != http.StatusNotFound || ae.Code != "project_not_found" || !strings.Contains(ae.Error, project) {
				t.Errorf("project %s: %d %+v, want 404 project_not_found", project, code, ae)
			}
		}
		notFound(bob, "0b7a1c2d-3e4f-5a6b-8c7d-9e0f1a2b3c4d")
		notFound(bob, "no-such-project")
		notFound(bob, privateP)
		notFound(bob, "alice-private")
		// The owner may watch her private project; a public one is anyone's, by UUID or
		// slug, and is stored by its UUID (the sensors' feed id the evaluator matches).
		for _, c := range []struct{ key, project, want string }{{alice, privateP, privateP}, {alice, "alice-private", privateP}, {bob, projectP, projectP}, {bob, "aq-feed", projectP}} {
			var r Created
			if code := e.call(t, c.key, http.MethodPost, "/alerts/rules", rule(`{"project_id":"`+c.project+`"}`, `{"op":"stale"}`, "PT0S"), &r); code != http.StatusCreated || r.Target.ProjectID != c.want {
				t.Errorf("project %s: %d %+v, want 201 stored as %s", c.project, code, r.Target, c.want)
			}
		}
	})
}
