package etag

import "testing"

func TestMatch(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		header string
		want   bool
	}{
		{"", false}, {`"a"`, true}, {`W/"a"`, true}, {`"b", "a"`, true}, {` "b" ,W/"a" `, true},
		{"*", true}, {`"b"`, false}, {`"a-gzip"`, false}, {`a`, false},
	} {
		if got := Match(tc.header, `"a"`); got != tc.want {
			t.Errorf("Match(%q) = %v, want %v", tc.header, got, tc.want)
		}
	}
}
