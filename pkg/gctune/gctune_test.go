package gctune

import "testing"

func TestLimit(t *testing.T) {
	for _, tt := range []struct {
		env  string
		want int64
	}{
		{"", MemoryLimit},
		{"1073741824", 966367641}, // 1 GiB limit: 90%
		{"536870912", 483183820},
		{"0", MemoryLimit},
		{"-5", MemoryLimit},
		{"1Gi", MemoryLimit}, // the downward API with divisor 1 gives bytes; anything else is ignored
	} {
		got := Limit(func(k string) string {
			if k == EnvMemoryLimit {
				return tt.env
			}
			return ""
		})
		if got != tt.want {
			t.Errorf("Limit(MEMORY_LIMIT=%q) = %d, want %d", tt.env, got, tt.want)
		}
	}
}
