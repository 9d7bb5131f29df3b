// Package freshness holds the one staleness rule of sensorgate (docs/api-decisions.md,
// "Area latest with staleness"), so that REST answers and every MCP tool family agree on
// when a reading is stale. Before it existed the tool families disagreed (1,200 s in one,
// 3,000 s in another); nothing else may decide staleness.
//
// The rule: a reading is stale when its age exceeds max_age if the caller gave one,
// otherwise when its age exceeds Factor x the sensor's expected reporting interval
// (DefaultInterval when the interval is unknown, so 7,200 s). A sensor that never reported
// is stale. Ages and thresholds are whole seconds, so a client can check the verdict
// against the age_seconds it is shown: stale == age_seconds > stale_after_seconds.
package freshness

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// DefaultInterval is assumed for a sensor that does not say how often it reports.
const DefaultInterval = time.Hour

// Factor: one missed report is normal, two in a row are not.
const Factor = 2

// MaxMaxAge bounds max_age so that the threshold arithmetic cannot overflow and a typo
// (an age in milliseconds) is caught rather than silently meaning "never stale".
const MaxMaxAge = 10 * 366 * 24 * time.Hour

// Verdict is the freshness of one sensor's newest reading at one instant.
type Verdict struct {
	// AgeSeconds is the whole seconds from the reading to now (0 for a reading stamped in
	// the future); nil when the sensor never reported.
	AgeSeconds *int64
	// ExpectedIntervalSeconds is the sensor's reporting interval, DefaultInterval when the
	// sensor does not say.
	ExpectedIntervalSeconds int64
	// StaleAfterSeconds is the age beyond which the reading is stale: max_age when given,
	// otherwise Factor x ExpectedIntervalSeconds.
	StaleAfterSeconds int64
	// Stale is the verdict; true for a sensor that never reported.
	Stale bool
}

// Rule is the staleness rule of one request: MaxAge zero means the request gave none.
type Rule struct {
	MaxAge    time.Duration
	HasMaxAge bool
}

// WithMaxAge returns the rule of a request that gave max_age (zero is allowed: then any
// reading older than the current second is stale).
func WithMaxAge(d time.Duration) Rule { return Rule{MaxAge: d, HasMaxAge: true} }

// ExpectedInterval is the interval the rule assumes for a sensor reporting every
// intervalS seconds (DefaultInterval for zero or negative, meaning unknown).
func ExpectedInterval(intervalS int) time.Duration {
	if intervalS <= 0 {
		return DefaultInterval
	}
	return time.Duration(intervalS) * time.Second
}

// StaleAfter is the age in whole seconds beyond which a reading of a sensor reporting
// every intervalS seconds is stale under the rule.
func (r Rule) StaleAfter(intervalS int) int64 {
	if r.HasMaxAge {
		return int64(r.MaxAge / time.Second)
	}
	return Factor * int64(ExpectedInterval(intervalS)/time.Second)
}

// Assess applies the rule to a sensor whose newest reading is at last (nil or zero: it
// never reported) and which reports every intervalS seconds (0: unknown).
func (r Rule) Assess(last *time.Time, intervalS int, now time.Time) Verdict {
	v := Verdict{
		ExpectedIntervalSeconds: int64(ExpectedInterval(intervalS) / time.Second),
		StaleAfterSeconds:       r.StaleAfter(intervalS),
		Stale:                   true,
	}
	if last == nil || last.IsZero() {
		return v
	}
	age := max(int64(now.Sub(*last)/time.Second), 0)
	v.AgeSeconds = &age
	v.Stale = age > v.StaleAfterSeconds
	return v
}

// Assess applies the default rule (no max_age): the form MCP tools without a max_age
// argument use.
func Assess(last *time.Time, intervalS int, now time.Time) Verdict {
	return Rule{}.Assess(last, intervalS, now)
}

// ErrMaxAge is wrapped by every ParseMaxAge error, so callers can tell a bad value apart.
var ErrMaxAge = errors.New("max_age must be whole seconds (e.g. 900) or an ISO 8601 duration (e.g. PT15M, P1DT6H, P2W)")

// ParseMaxAge reads a max_age value: whole non-negative seconds ("900") or an ISO 8601
// duration of weeks, days, hours, minutes and seconds ("PT15M", "P1DT6H", "PT90.5S",
// "P2W"). Years and months are refused: their length depends on the calendar, and an age
// limit has to be exact. The result is at most MaxMaxAge.
func ParseMaxAge(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, fmt.Errorf("empty value: %w", ErrMaxAge)
	}
	var d time.Duration
	if c := s[0]; c >= '0' && c <= '9' {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n > int64(MaxMaxAge/time.Second) {
			if err == nil || errors.Is(err, strconv.ErrRange) {
				return 0, fmt.Errorf("%q is more than %d seconds: %w", s, int64(MaxMaxAge/time.Second), ErrMaxAge)
			}
			return 0, fmt.Errorf("%q: %w", s, ErrMaxAge)
		}
		d = time.Duration(n) * time.Second
	} else {
		var err error
		if d, err = parseISODuration(s); err != nil {
			return 0, fmt.Errorf("%q: %v: %w", s, err, ErrMaxAge)
		}
	}
	if d > MaxMaxAge {
		return 0, fmt.Errorf("%q is longer than %s: %w", s, MaxMaxAge, ErrMaxAge)
	}
	return d, nil
}

// parseISODuration reads PnW, or PnDTnHnMnS with any part left out (at least one given);
// only the last given part may have a fraction. Lower-case letters are accepted.
func parseISODuration(s string) (time.Duration, error) {
	s = strings.ToUpper(s)
	if len(s) < 3 || s[0] != 'P' {
		return 0, errors.New("not a duration")
	}
	rest := s[1:]
	if strings.HasSuffix(rest, "W") && !strings.ContainsAny(rest[:len(rest)-1], "DTHMS") {
		v, err := isoNumber(rest[:len(rest)-1], 7*24*time.Hour)
		return v, err
	}
	datePart, timePart, hasT := strings.Cut(rest, "T")
	if hasT && timePart == "" {
		return 0, errors.New("T without a time part")
	}
	var total time.Duration
	parts, fraction := 0, false
	add := func(num string, unit time.Duration) error {
		if fraction {
			return errors.New("only the smallest unit may have a fraction")
		}
		v, err := isoNumber(num, unit)
		if err != nil {
			return err
		}
		fraction = strings.ContainsAny(num, ".,")
		if total > MaxMaxAge || v > MaxMaxAge {
			return errors.New("too long")
		}
		total += v
		parts++
		return nil
	}
	if datePart != "" {
		if !strings.HasSuffix(datePart, "D") {
			return 0, errors.New("years and months are not allowed (their length varies); use days, weeks or hours")
		}
		if err := add(datePart[:len(datePart)-1], 24*time.Hour); err != nil {
			return 0, err
		}
	}
	units := []struct {
		letter byte
		unit   time.Duration
	}{{'H', time.Hour}, {'M', time.Minute}, {'S', time.Second}}
	for _, u := range units {
		if timePart == "" {
			break
		}
		i := strings.IndexByte(timePart, u.letter)
		if i < 0 {
			continue
		}
		if err := add(timePart[:i], u.unit); err != nil {
			return 0, err
		}
		timePart = timePart[i+1:]
	}
	if timePart != "" {
		return 0, fmt.Errorf("unexpected %q", timePart)
	}
	if parts == 0 {
		return 0, errors.New("no value")
	}
	return total, nil
}

// isoNumber is a non-negative decimal (comma or point) times unit.
func isoNumber(num string, unit time.Duration) (time.Duration, error) {
	if num == "" {
		return 0, errors.New("a unit without a number")
	}
	for _, c := range num {
		if (c < '0' || c > '9') && c != '.' && c != ',' {
			return 0, fmt.Errorf("%q is not a number", num)
		}
	}
	f, err := strconv.ParseFloat(strings.Replace(num, ",", ".", 1), 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("%q is not a number", num)
	}
	if f*float64(unit) > float64(MaxMaxAge) {
		return 0, errors.New("too long")
	}
	return time.Duration(f * float64(unit)), nil
}
