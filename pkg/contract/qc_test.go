package contract

import (
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/sensorgate/sensorgate/pkg/apierr"
)

func TestParseQC(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		in   string
		def  QCFilter
		keep []int
		drop []int
		str  string
	}{
		{"", QCAll, []int{1, 2, 3, 4, 9}, nil, "all"},
		{"", QCGood, []int{1, 2}, []int{3, 4, 9}, "good"},
		{"all", QCGood, []int{1, 2, 3, 4, 9}, nil, "all"},
		{"good", QCAll, []int{1, 2}, []int{3, 4}, "good"},
		{"3, 4", QCAll, []int{3, 4}, []int{1, 2, 9}, "3,4"},
		{"1,2", QCAll, []int{1, 2}, []int{3}, "good"},
	} {
		f, err := ParseQC(url.Values{"qc": {c.in}}, c.def)
		if err != nil {
			t.Fatalf("qc=%q: %v", c.in, err)
		}
		for _, k := range c.keep {
			if !f.Keep(k) {
				t.Errorf("qc=%q drops %d", c.in, k)
			}
		}
		for _, k := range c.drop {
			if f.Keep(k) {
				t.Errorf("qc=%q keeps %d", c.in, k)
			}
		}
		if f.String() != c.str {
			t.Errorf("qc=%q spelled %q, want %q", c.in, f.String(), c.str)
		}
	}
	for _, bad := range []string{"5", "bad", "1,x", ",", "0", "10"} {
		_, err := ParseQC(url.Values{"qc": {bad}}, QCAll)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != apierr.InvalidParameter || !strings.Contains(ae.Message, `"qc"`) {
			t.Errorf("qc=%q: %v, want an error naming qc", bad, err)
		}
	}
	if !QCFilter(0).Keep(4) || !QCFilter(0).All() {
		t.Error("the zero filter must keep every flag")
	}
}
