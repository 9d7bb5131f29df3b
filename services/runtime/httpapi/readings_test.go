package httpapi

import (
	"testing"

	"github.com/google/uuid"
)

func TestAppendUUID(t *testing.T) {
	t.Parallel()
	for i := 0; i < 100; i++ {
		u := uuid.New()
		if got := string(appendUUID(nil, u)); got != u.String() {
			t.Fatalf("%s != %s", got, u)
		}
	}
}
