package qc

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MarkdownTable is the thresholds table as docs/quality.md shows it (TestDocumentedTable
// keeps the two equal, so the documentation is the table that runs).
func MarkdownTable() string {
	var b strings.Builder
	b.WriteString("| parameter | sensor range (fail) | user range (suspect) | spike suspect / fail | rate of change (suspect) | flat line: tolerance, suspect / fail | window |\n")
	b.WriteString("|---|---|---|---|---|---|---|\n")
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	off := func(on bool, s string) string {
		if !on {
			return "off"
		}
		return s
	}
	for _, l := range Table() {
		fmt.Fprintf(&b, "| `%s` | %s .. %s | %s .. %s | %s | %s | %s | %s |\n", l.Param,
			num(l.SensorMin), num(l.SensorMax), num(l.UserMin), num(l.UserMax),
			off(l.SpikeSuspect > 0, num(l.SpikeSuspect)+" / "+num(l.SpikeFail)),
			off(l.RatePerHour > 0, num(l.RatePerHour)+" /h"),
			off(l.FlatSuspect > 0, "±"+num(l.FlatTolerance)+", "+dur(l.FlatSuspect)+" / "+dur(l.FlatFail)),
			off(l.Window > 0, dur(l.Window)))
	}
	return b.String()
}

// Sources is the source of each parameter's numbers, one line a parameter.
func Sources() string {
	var b strings.Builder
	for _, l := range Table() {
		fmt.Fprintf(&b, "- `%s`: %s.\n", l.Param, l.Source)
	}
	return b.String()
}

func dur(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.Itoa(int(d/(24*time.Hour))) + " d"
	}
	return strconv.Itoa(int(d/time.Hour)) + " h"
}

// Table returns the thresholds of every parameter, in the table's order.
func Table() []Limits {
	out := make([]Limits, 0, len(table))
	for _, l := range table {
		out = append(out, *byParam[l.Param])
	}
	return out
}

// For returns the thresholds of param.
func For(param string) (Limits, bool) {
	if l := byParam[param]; l != nil {
		return *l, true
	}
	return Limits{}, false
}
