package observation

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestAdapterParsesByFormatAndNamesUnknownFormats(t *testing.T) {
	errBad := errors.New("bad body")
	a := Adapter{
		Name: "demo",
		Parsers: map[string]ParseFunc{
			"demo.b": BodyParser(func(body []byte) (Batch, error) {
				if string(body) == "bad" {
					return Batch{}, errBad
				}
				return Batch{Provider: "body:" + string(body)}, nil
			}),
			"demo.a": StationParser(func(id string, body []byte) (Batch, error) {
				return Batch{Provider: "station:" + id + ":" + string(body)}, nil
			}),
		},
	}
	if got := a.Formats(); !slices.Equal(got, []string{"demo.a", "demo.b"}) {
		t.Fatalf("Formats() = %v, want sorted [demo.a demo.b]", got)
	}
	if b, err := a.Parse(Payload{Format: "demo.a", StationID: "S1", Body: []byte("x")}); err != nil || b.Provider != "station:S1:x" {
		t.Fatalf("demo.a: %+v, %v", b, err)
	}
	if b, err := a.Parse(Payload{Format: "demo.b", StationID: "ignored", Body: []byte("y")}); err != nil || b.Provider != "body:y" {
		t.Fatalf("demo.b: %+v, %v", b, err)
	}
	if _, err := a.Parse(Payload{Format: "demo.b", Body: []byte("bad")}); !errors.Is(err, errBad) {
		t.Fatalf("the parser's error is not passed on: %v", err)
	}
	_, err := a.Parse(Payload{Format: "demo.c"})
	if err == nil || err.Error() != `demo: unknown payload format "demo.c" (want one of demo.a, demo.b)` {
		t.Fatalf("unknown format: %v", err)
	}
	one := Adapter{Name: "solo", Parsers: map[string]ParseFunc{"solo.x": BodyParser(func([]byte) (Batch, error) { return Batch{}, nil })}}
	if _, err := one.Parse(Payload{Format: ""}); err == nil || !strings.HasSuffix(err.Error(), `format "" (want solo.x)`) {
		t.Fatalf("unknown format of a one-format adapter: %v", err)
	}
}
