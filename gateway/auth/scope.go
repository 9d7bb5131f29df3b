package auth

import (
	"strings"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

// Scope is a set of the OAuth scopes a token or key carries (docs/api-decisions.md "OAuth
// 2.1 for MCP and REST"): what a caller may do, whatever face it calls through.
type Scope uint8

// The scopes, as bits of a Scope.
const (
	// ScopeSensors: the catalog, services, projects, OGC.
	ScopeSensors Scope = 1 << iota
	// ScopeReadings: readings, latest, aggregates, export, streams, the reading tools.
	ScopeReadings
	// ScopeAlerts: alert rules, their events and deliveries, and their tools.
	ScopeAlerts

	// AllScopes is what an API key created without scopes carries.
	AllScopes = ScopeSensors | ScopeReadings | ScopeAlerts
)

// scopeNames are the scopes' names on the wire, in the order they are listed.
var scopeNames = []struct {
	s    Scope
	name string
}{{ScopeSensors, "sensors:read"}, {ScopeReadings, "readings:read"}, {ScopeAlerts, "alerts:write"}}

// ScopeNames lists every scope's name (scopes_supported).
func ScopeNames() []string {
	out := make([]string, len(scopeNames))
	for i, n := range scopeNames {
		out[i] = n.name
	}
	return out
}

// ScopeDescription says in words what a scope lets a client do (the consent page).
func ScopeDescription(name string) string {
	switch name {
	case "sensors:read":
		return "read the sensor catalog, services and projects"
	case "readings:read":
		return "read sensor readings: latest values, history, aggregates, exports and live streams"
	case "alerts:write":
		return "create, change and delete your alert rules and read their events"
	}
	return name
}

// ParseScopes reads a space- or comma-separated list of scope names; an unknown name is a
// 400 naming param. An empty list is 0 (the caller decides what that means).
func ParseScopes(param, s string) (Scope, error) {
	var out Scope
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ' ' || r == ',' }) {
		found := false
		for _, n := range scopeNames {
			if f == n.name {
				out |= n.s
				found = true
			}
		}
		if !found {
			return 0, apierr.Invalid(param, "unknown scope %q: want some of %s", f, strings.Join(ScopeNames(), ", "))
		}
	}
	return out, nil
}

// KeyScopes is the scope set of a stored key's scopes column: empty is every scope (keys
// made before scopes existed, and keys created without a list). A column that does not
// parse allows nothing.
func KeyScopes(stored string) Scope {
	if stored == "" {
		return AllScopes
	}
	s, err := ParseScopes("scopes", stored)
	if err != nil {
		return 0
	}
	return s
}

// Names are the scope names of s, in the canonical order.
func (s Scope) Names() []string {
	var out []string
	for _, n := range scopeNames {
		if s&n.s != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// String is s as a space-separated list (the OAuth scope parameter's form).
func (s Scope) String() string { return strings.Join(s.Names(), " ") }

// Allows reports whether the identity carries every scope of need.
func (id Identity) Allows(need Scope) bool { return id.Scopes&need == need }

// RouteScope is the scope a route of /api/v1 needs, by its route template (Gin's FullPath):
// alert rules need alerts:write, readings need readings:read, the rest of the catalog
// sensors:read. The MCP endpoints other than the alerts' need no particular scope: their
// tools/list and tools/call go by each tool's scope (ToolScope).
func RouteScope(route string) Scope {
	r := strings.TrimPrefix(route, "/api/v1")
	switch {
	case strings.HasPrefix(r, "/alerts"):
		return ScopeAlerts
	case r == "/services/:id/mcp":
		return ScopeReadings // the services' own tools read their readings
	case strings.HasSuffix(r, "/mcp"):
		return 0
	case strings.Contains(r, "/readings"):
		return ScopeReadings
	}
	return ScopeSensors
}

// readingTools are the MCP tools that read readings (the rest of the catalog tools read
// the catalog); alert tools are told by their prefix.
var readingTools = map[string]bool{
	"sensor_last_reading": true, "sensor_cleaned_stream": true, "get_readings": true,
	"aggregate_readings": true, "latest_in_area": true,
}

// ToolScope is the scope an MCP tool needs: the alert tools alerts:write, the tools that
// read readings readings:read, every other tool sensors:read. The mcp package filters
// tools/list and refuses tools/call with it (a service's own tools, forwarded as
// service__tool, read that service's readings): Identity.Allows(ToolScope(name)).
func ToolScope(name string) Scope {
	switch {
	case strings.Contains(name, "alert"):
		return ScopeAlerts
	case readingTools[name] || strings.Contains(name, "reading") || strings.Contains(name, "latest") || strings.Contains(name, "__"):
		return ScopeReadings
	}
	return ScopeSensors
}
