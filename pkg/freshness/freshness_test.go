package freshness

import (
	"errors"
	"testing"
	"time"
)

func TestAssess(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	tests := []struct {
		name      string
		rule      Rule
		last      *time.Time
		intervalS int
		wantAge   int64 // -1: nil
		wantAfter int64
		wantIntv  int64
		wantStale bool
	}{
		{"unknown interval, just under 7200 s", Rule{}, ago(7200 * time.Second), 0, 7200, 7200, 3600, false},
		{"unknown interval, one second over", Rule{}, ago(7201 * time.Second), 0, 7201, 7200, 3600, true},
		{"negative interval counts as unknown", Rule{}, ago(7201 * time.Second), -5, 7201, 7200, 3600, true},
		{"600 s interval: 1200 s is fresh", Rule{}, ago(1200 * time.Second), 600, 1200, 1200, 600, false},
		{"600 s interval: 1201 s is stale", Rule{}, ago(1201 * time.Second), 600, 1201, 1200, 600, true},
		{"sub-second part is dropped from the age", Rule{}, ago(1200*time.Second + 900*time.Millisecond), 600, 1200, 1200, 600, false},
		{"max_age wins over the interval", WithMaxAge(300 * time.Second), ago(301 * time.Second), 600, 301, 300, 600, true},
		{"max_age longer than 2x interval", WithMaxAge(3 * time.Hour), ago(2 * time.Hour), 600, 7200, 10800, 600, false},
		{"max_age zero: any second old is stale", WithMaxAge(0), ago(time.Second), 600, 1, 0, 600, true},
		{"max_age zero: same second is fresh", WithMaxAge(0), ago(0), 600, 0, 0, 600, false},
		{"future timestamp has age 0", Rule{}, ago(-time.Minute), 600, 0, 1200, 600, false},
		{"never reported is stale", Rule{}, nil, 600, -1, 1200, 600, true},
		{"zero time is never reported", WithMaxAge(time.Hour), &time.Time{}, 0, -1, 3600, 3600, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := tc.rule.Assess(tc.last, tc.intervalS, now)
			if tc.wantAge < 0 {
				if v.AgeSeconds != nil {
					t.Errorf("age = %d, want nil", *v.AgeSeconds)
				}
			} else if v.AgeSeconds == nil || *v.AgeSeconds != tc.wantAge {
				t.Errorf("age = %v, want %d", v.AgeSeconds, tc.wantAge)
			}
			if v.StaleAfterSeconds != tc.wantAfter || v.ExpectedIntervalSeconds != tc.wantIntv || v.Stale != tc.wantStale {
				t.Errorf("verdict = %+v, want stale_after %d interval %d stale %v", v, tc.wantAfter, tc.wantIntv, tc.wantStale)
			}
			if v.AgeSeconds != nil && v.Stale != (*v.AgeSeconds > v.StaleAfterSeconds) {
				t.Errorf("verdict %+v disagrees with its own age and threshold", v)
			}
		})
	}
	if got := Assess(ago(7201*time.Second), 0, now); !got.Stale {
		t.Errorf("package Assess = %+v, want the default rule's stale", got)
	}
}

func TestParseMaxAge(t *testing.T) {
	good := map[string]time.Duration{
		"0":          0,
		"900":        900 * time.Second,
		" 60 ":       time.Minute,
		"PT15M":      15 * time.Minute,
		"pt15m":      15 * time.Minute,
		"PT1H30M":    90 * time.Minute,
		"P1D":        24 * time.Hour,
		"P1DT6H":     30 * time.Hour,
		"PT90S":      90 * time.Second,
		"PT1.5S":     1500 * time.Millisecond,
		"PT0,5H":     30 * time.Minute,
		"P2W":        14 * 24 * time.Hour,
		"PT1H0M0S":   time.Hour,
		"P0D":        0,
		"P3650DT12H": 3650*24*time.Hour + 12*time.Hour,
	}
	for in, want := range good {
		got, err := ParseMaxAge(in)
		if err != nil || got != want {
			t.Errorf("ParseMaxAge(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := []string{
		"", "-5", "1.5", "15m", "abc", "P", "PT", "P1Y", "P1M", "P1DT", "PT1.5H30M", "PTM",
		"PT5X", "P1W2D", "PT-5S", "99999999999999999999", "400000000", "P4000D", "PT1H2H",
	}
	for _, in := range bad {
		if got, err := ParseMaxAge(in); err == nil {
			t.Errorf("ParseMaxAge(%q) = %v, want an error", in, got)
		} else if !errors.Is(err, ErrMaxAge) {
			t.Errorf("ParseMaxAge(%q) error %v does not wrap ErrMaxAge", in, err)
		}
	}
}
