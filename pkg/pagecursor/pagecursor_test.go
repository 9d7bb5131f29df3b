package pagecursor

import (
	"errors"
	"testing"
)

func TestCursorRoundTripsAndIsRefusedForOtherArguments(t *testing.T) {
	type args struct {
		Station string `json:"station"`
		Days    int    `json:"days"`
	}
	q := QueryHash(args{"41002", 3})
	if q == 0 || q == QueryHash(args{"41002", 4}) || q != QueryHash(args{"41002", 3}) {
		t.Fatalf("QueryHash does not tell the arguments apart: %d", q)
	}
	want := Cursor{Page: 3, Limit: 50, Query: q, Since: "2026-11-01T00:00:00.000Z", Until: "2026-11-04T00:00:00.000Z"}
	s := Encode(want)
	got, err := Decode(s, q)
	if err != nil || got != want {
		t.Fatalf("Decode(Encode(%+v)) = %+v, %v", want, got, err)
	}
	if _, err := Decode(s, QueryHash(args{"41002", 4})); !errors.Is(err, ErrOtherQuery) {
		t.Fatalf("cursor with other arguments: %v, want ErrOtherQuery", err)
	}
	if QueryHash(func() {}) != 0 {
		t.Fatal("QueryHash of what JSON cannot encode should be 0")
	}
}

func TestNotACursor(t *testing.T) {
	q := QueryHash("x")
	for _, s := range []string{"", "!!", "bm90IGpzb24", Encode(Cursor{Page: 1, Limit: 10, Query: q}), Encode(Cursor{Page: 2, Limit: 0, Query: q})} {
		if _, err := Decode(s, q); !errors.Is(err, ErrNotACursor) {
			t.Errorf("Decode(%q) = %v, want ErrNotACursor", s, err)
		}
	}
}
