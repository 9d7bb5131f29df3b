package mcp

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sensorgate/sensorgate/gateway/alerts"
	"github.com/sensorgate/sensorgate/gateway/auth"
	"github.com/sensorgate/sensorgate/pkg/apierr"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// The alert tools (POST /api/v1/alerts/mcp) manage the caller's key's alert rules and
// read their events: the REST routes of /api/v1/alerts in the one vocabulary, through the
// same checks (gateway/alerts.Handlers.Create and the store), so a rule made by an agent
// is the rule a person sees in REST and is delivered the same way. The scope also serves
// the key's events as a resource that a 2026-07-28 client subscribes to (listen.go).

type createAlertRuleArgs struct {
	Name       string           `json:"name" jsonschema:"A name for people, 1 to 200 characters"`
	Target     alerts.Target    `json:"target" jsonschema:"Which sensors the rule watches: exactly one of sensor_ids, bbox, near or project_id"`
	Condition  alerts.Condition `json:"condition" jsonschema:"When a sensor breaches: parameter above or below value, outside min..max, or op stale (no reading by the freshness rule: older than twice the reporting interval)"`
	For        string           `json:"for,omitempty" jsonschema:"ISO 8601 duration the condition must hold before the rule fires, such as PT0S (at once), PT1H or P1D; default PT0S"`
	WebhookURL string           `json:"webhook_url,omitempty" jsonschema:"HTTPS endpoint that receives each event as a signed Standard Webhooks POST; the secret comes back once, in webhook_secret"`
}

type ruleIDArgs struct {
	RuleID string `json:"rule_id" jsonschema:"The rule's id (list_alert_rules names them)"`
}

type alertRules struct {
	Rules []alerts.Rule `json:"rules"`
}

type deletedRule struct {
	Deleted string `json:"deleted" jsonschema:"Id of the rule deleted"`
}

type alertEventsArgs struct {
	Since  string `json:"since,omitempty" jsonschema:"Only events raised at or after this time (RFC 3339 or a date)"`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page"`
	Limit  *int   `json:"limit,omitempty" jsonschema:"Events per page (default 100, at most 1000)"`
}

func (h *Handler) newAlertTools() (*toolSet, error) {
	ts := newToolSet()
	addTool(ts, toolSpec[createAlertRuleArgs, alerts.Created]{
		Name: "create_alert_rule", Title: "Create an alert rule",
		Description: "Watch sensors for a condition and be told when it holds: events go to " + AlertEventsURI + " (subscribe to it), " +
			"GET /api/v1/alerts/stream and, with webhook_url, a signed webhook. A firing rule resolves once the value is back past a hysteresis margin " +
			"(5% of the threshold unless condition.hysteresis says how far, in the parameter's unit). Rules count against the key's quota. " +
			"Example: PM2.5 above 35 µg/m³ for an hour within 10 km: {\"name\":\"school\",\"target\":{\"near\":{\"lat\":40.7,\"lon\":-74,\"radius_km\":10}},\"condition\":{\"parameter\":\"pm2_5_ug_per_m3\",\"op\":\"above\",\"value\":35},\"for\":\"PT1H\"}.",
		Writes: true,
		Tweak: func(in, _ *jsonschema.Schema) {
			in.Required = []string{"name", "target", "condition"}
			setEnum(prop(in, "condition", "op"), alerts.OpAbove, alerts.OpBelow, alerts.OpOutside, alerts.OpStale)
			prop(in, "condition", "parameter").Description = "Canonical parameter id (describe_catalog lists them); not for stale"
			prop(in, "condition", "value").Description = "Threshold of above and below, in the parameter's canonical unit"
			prop(in, "condition", "min").Description = "Lower bound of outside"
			prop(in, "condition", "max").Description = "Upper bound of outside"
			prop(in, "target", "sensor_ids").Description = fmt.Sprintf("Sensor UUIDs (at most %d)", alerts.MaxSensorIDs)
			prop(in, "target", "project_id").Description = "A project's UUID: its sensors"
			prop(in, "target", "near", "radius_km").Description = "Radius in km around lat, lon"
		},
		Run: func(ctx context.Context, cc *callCtx, a createAlertRuleArgs) (string, alerts.Created, error) {
			id, err := callerKey(ctx)
			if err != nil {
				return "", alerts.Created{}, err
			}
			if a.For == "" {
				a.For = "PT0S"
			}
			out, err := cc.h.alerts.Create(ctx, id, alerts.CreateRequest{Name: a.Name, Target: a.Target, Condition: a.Condition, For: a.For, WebhookURL: a.WebhookURL})
			if err != nil {
				return "", alerts.Created{}, alertArgError("create_alert_rule", err)
			}
			summary := fmt.Sprintf("Rule %s (%q) created: %s.", out.ID, out.Name, describeCondition(out.Condition, out.For))
			if out.WebhookSecret != "" {
				summary += " Keep webhook_secret: it is shown only now."
			}
			return summary, out, nil
		},
	})
	addTool(ts, toolSpec[noArgs, alertRules]{
		Name: "list_alert_rules", Title: "List alert rules",
		Description: "The alert rules of this API key, oldest first, with their targets, conditions and webhooks (never the secrets).",
		Run: func(ctx context.Context, cc *callCtx, _ noArgs) (string, alertRules, error) {
			id, err := callerKey(ctx)
			if err != nil {
				return "", alertRules{}, err
			}
			rules, err := cc.h.alerts.Store.Rules(ctx, id.KeyIDText)
			if err != nil {
				return "", alertRules{}, err
			}
			if rules == nil {
				rules = []alerts.Rule{}
			}
			return fmt.Sprintf("%d alert rules.", len(rules)), alertRules{Rules: rules}, nil
		},
	})
	addTool(ts, toolSpec[ruleIDArgs, deletedRule]{
		Name: "delete_alert_rule", Title: "Delete an alert rule",
		Description: "Delete one of this key's alert rules: it stops evaluating at once; events already raised stay readable and deliverable.",
		Writes:      true, Destructive: true,
		Tweak: func(in, _ *jsonschema.Schema) { in.Required = []string{"rule_id"} },
		Run: func(ctx context.Context, cc *callCtx, a ruleIDArgs) (string, deletedRule, error) {
			id, err := callerKey(ctx)
			if err != nil {
				return "", deletedRule{}, err
			}
			if strings.TrimSpace(a.RuleID) == "" {
				return "", deletedRule{}, badArg("delete_alert_rule", "rule_id", "is required")
			}
			if err := cc.h.alerts.Store.DeleteRule(ctx, id.KeyIDText, a.RuleID); err != nil {
				return "", deletedRule{}, err
			}
			return "Rule " + a.RuleID + " deleted.", deletedRule{Deleted: a.RuleID}, nil
		},
	})
	addTool(ts, toolSpec[alertEventsArgs, alerts.EventPage]{
		Name: "get_alert_events", Title: "Get alert events",
		Description: "Events of this key's alert rules, oldest first: each is a rule starting to fire or resolving over one sensor, with the value and the reading's time. " +
			"Pass next_cursor back as cursor for the next page. To be told of new ones, subscribe to " + AlertEventsURI + ".",
		Tweak: func(in, _ *jsonschema.Schema) { setRange(prop(in, "limit"), 1, alerts.MaxLimit) },
		Run: func(ctx context.Context, cc *callCtx, a alertEventsArgs) (string, alerts.EventPage, error) {
			const tool = "get_alert_events"
			var none alerts.EventPage
			id, err := callerKey(ctx)
			if err != nil {
				return "", none, err
			}
			limit := alerts.DefaultLimit
			if a.Limit != nil {
				if *a.Limit < 1 || *a.Limit > alerts.MaxLimit {
					return "", none, badArg(tool, "limit", "must be from 1 to %d", alerts.MaxLimit)
				}
				limit = *a.Limit
			}
			var since time.Time
			if a.Since != "" {
				if since, err = contract.ParseTime(a.Since); err != nil {
					return "", none, badArg(tool, "since", "must be an RFC 3339 time such as 2026-01-02T15:04:05Z or a date")
				}
			}
			var after int64
			if a.Cursor != "" {
				if after, err = strconv.ParseInt(a.Cursor, 10, 64); err != nil || after < 0 {
					return "", none, badArg(tool, "cursor", "must be the next_cursor of a previous page")
				}
			}
			page, err := cc.h.alerts.Store.Events(ctx, id.KeyIDText, since, after, limit)
			if err != nil {
				return "", none, err
			}
			firing := 0
			for _, e := range page.Events {
				if e.State == alerts.StateFiring {
					firing++
				}
			}
			summary := fmt.Sprintf("%d events (%d firing, %d resolved).", len(page.Events), firing, len(page.Events)-firing)
			if page.NextCursor != "" {
				summary += " More: call again with cursor=next_cursor."
			}
			return summary, page, nil
		},
	})
	ts.addResource(&sdk.Resource{
		URI:         AlertEventsURI,
		Name:        "alert-events",
		Title:       "Your alert events",
		Description: "The newest events of this API key's alert rules (firing and resolved), oldest first; subscribe (subscriptions/listen) to be told when one is raised.",
		MIMEType:    "application/json",
	}, h.readAlertEvents)
	return ts.done()
}

// callerKey is the API key the call came with: alert rules belong to a key.
func callerKey(ctx context.Context) (auth.Identity, error) {
	id, ok := auth.FromContext(ctx)
	if !ok {
		return id, apierr.New(apierr.MissingAPIKey, "alert rules belong to an API key: call with x-api-key")
	}
	return id, nil
}

// alertArgError names the argument as the tool's inputSchema does: REST's field paths
// (target.near.radius_km) are the tool's argument paths too.
func alertArgError(tool string, err error) error {
	e := apierr.From(err)
	if e.Code != apierr.InvalidParameter {
		return err
	}
	return apierr.New(e.Code, "%s: %s", tool, e.Message)
}

func describeCondition(c alerts.Condition, holdFor string) string {
	num := func(p *float64) string {
		if p == nil {
			return "?"
		}
		return strconv.FormatFloat(*p, 'f', -1, 64)
	}
	var s string
	switch c.Op {
	case alerts.OpStale:
		s = "fires when a sensor stops reporting"
	case alerts.OpOutside:
		s = fmt.Sprintf("fires when %s is outside %s..%s", c.Parameter, num(c.Min), num(c.Max))
	default:
		s = fmt.Sprintf("fires when %s is %s %s", c.Parameter, c.Op, num(c.Value))
	}
	if holdFor != "" && holdFor != "PT0S" {
		s += " for " + holdFor
	}
	return s
}
