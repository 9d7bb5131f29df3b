// Package dashboard reads the Grafana dashboard of deploy/observability and turns each
// panel's query into the PromQL that Grafana would send to Prometheus, so tests can parse
// the queries (PromQL parser of the Prometheus module) and run them against a real
// Prometheus (the compose test) without a Grafana: Debian packages none, and Grafana's Go
// module is AGPL (docs/deploy.md, "Observability").
package dashboard

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Path is the dashboard's place in the repository.
const Path = "deploy/observability/grafana-dashboard.json"

// RateInterval is what Grafana puts for $__rate_interval with the Prometheus data
// source's default scrape interval (15 s): max($__interval + 15 s, 4 × 15 s) = 1 m for
// any dashboard range up to a few hours. It must span at least two scrapes of every
// target; the compose stack scrapes every 5 s.
const RateInterval = "1m"

// Query is one panel target: where it is and the PromQL Grafana would send.
type Query struct {
	Panel string // panel title
	RefID string
	Raw   string // the expression as written, with Grafana variables
	Expr  string // with the variables substituted as Grafana does with their current values
}

// Variable is a template variable whose query Grafana runs against Prometheus to fill
// its drop-down: label_values(Metric, Label), values kept when they match Regex.
type Variable struct {
	Name, Metric, Label string
	Regex               *regexp.Regexp // nil: every value
}

// Dashboard is the parsed dashboard.
type Dashboard struct {
	Title     string
	Queries   []Query
	Variables []Variable
	values    map[string]string // variable name -> its current value in a query
}

type panel struct {
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

type variable struct {
	Name     string          `json:"name"`
	Type     string          `json:"type"`
	Query    json.RawMessage `json:"query"`
	Regex    string          `json:"regex"`
	AllValue string          `json:"allValue"`
	Current  struct {
		Value json.RawMessage `json:"value"`
	} `json:"current"`
}

// Load reads a dashboard file.
func Load(path string) (*Dashboard, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	var doc struct {
		Title      string  `json:"title"`
		Panels     []panel `json:"panels"`
		Templating struct {
			List []variable `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("dashboard: %s: %w", path, err)
	}
	d := &Dashboard{Title: doc.Title, values: map[string]string{"__rate_interval": RateInterval}}
	for _, v := range doc.Templating.List {
		if err := d.addVariable(v); err != nil {
			return nil, fmt.Errorf("dashboard: variable %s: %w", v.Name, err)
		}
	}
	var walk func([]panel) error
	walk = func(ps []panel) error {
		for _, p := range ps {
			for _, t := range p.Targets {
				expr, err := d.substitute(t.Expr)
				if err != nil {
					return fmt.Errorf("dashboard: panel %q: %w", p.Title, err)
				}
				d.Queries = append(d.Queries, Query{Panel: p.Title, RefID: t.RefID, Raw: t.Expr, Expr: expr})
			}
			if err := walk(p.Panels); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(doc.Panels); err != nil {
		return nil, err
	}
	if len(d.Queries) == 0 {
		return nil, fmt.Errorf("dashboard: %s has no queries", path)
	}
	return d, nil
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*([a-zA-Z_][a-zA-Z0-9_]*)\)$`)

func (d *Dashboard) addVariable(v variable) error {
	switch v.Type {
	case "datasource", "interval", "constant", "custom", "textbox":
		if v.Type == "datasource" {
			return nil // the data source itself, not in any expression
		}
		return fmt.Errorf("variables of type %s are not handled here; add them to package dashboard", v.Type)
	case "query":
	default:
		return fmt.Errorf("unknown variable type %q", v.Type)
	}
	// The query is a string or, in newer dashboards, {"query": "...", "refId": ...}.
	var q string
	if err := json.Unmarshal(v.Query, &q); err != nil {
		var obj struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &obj); err != nil {
			return fmt.Errorf("query: %w", err)
		}
		q = obj.Query
	}
	m := labelValues.FindStringSubmatch(strings.TrimSpace(q))
	if m == nil {
		return fmt.Errorf("query %q is not label_values(metric, label)", q)
	}
	out := Variable{Name: v.Name, Metric: strings.TrimSpace(m[1]), Label: m[2]}
	if v.Regex != "" {
		re := strings.TrimSuffix(strings.TrimPrefix(v.Regex, "/"), "/")
		r, err := regexp.Compile("^(?:" + re + ")$")
		if err != nil {
			return fmt.Errorf("regex: %w", err)
		}
		out.Regex = r
	}
	d.Variables = append(d.Variables, out)
	// The current value: "All" puts the allValue (a regex) into the query.
	var cur any
	_ = json.Unmarshal(v.Current.Value, &cur)
	switch c := cur.(type) {
	case string:
		if c == "$__all" {
			if v.AllValue == "" {
				return errors.New(`"All" without an allValue (Grafana would list every value; set allValue)`)
			}
			d.values[v.Name] = v.AllValue
		} else {
			d.values[v.Name] = regexp.QuoteMeta(c)
		}
	case []any:
		var alts []string
		for _, x := range c {
			s, _ := x.(string)
			if s == "$__all" {
				alts = []string{v.AllValue}
				break
			}
			alts = append(alts, regexp.QuoteMeta(s))
		}
		d.values[v.Name] = "(" + strings.Join(alts, "|") + ")"
	default:
		return errors.New("no current value")
	}
	return nil
}

var variableRef = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\[\[(\w+)\]\]|\$(\w+)`)

// substitute replaces $name, ${name} and [[name]] with the variable's current value; an
// unknown name is an error (Grafana would send it unreplaced, and Prometheus refuse it).
func (d *Dashboard) substitute(expr string) (string, error) {
	var missing []string
	out := variableRef.ReplaceAllStringFunc(expr, func(s string) string {
		m := variableRef.FindStringSubmatch(s)
		name := m[1] + m[2] + m[3]
		v, ok := d.values[name]
		if !ok {
			missing = append(missing, name)
			return s
		}
		return v
	})
	if len(missing) > 0 {
		return "", fmt.Errorf("unknown variables %v in %q", missing, expr)
	}
	return out, nil
}

// MetricNames parses a PromQL expression with Prometheus' own parser and returns the
// metric names it selects, sorted.
func MetricNames(expr string) ([]string, error) {
	node, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, err
	}
	var names []string
	var selErr error
	parser.Inspect(node, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		name := vs.Name
		for _, m := range vs.LabelMatchers {
			if m.Name == labels.MetricName && m.Type == labels.MatchEqual {
				name = m.Value
			}
		}
		if name == "" {
			selErr = fmt.Errorf("selector %s names no metric", vs)
		} else if !slices.Contains(names, name) {
			names = append(names, name)
		}
		return nil
	})
	sort.Strings(names)
	return names, selErr
}
