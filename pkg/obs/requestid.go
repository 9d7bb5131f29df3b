package obs

import (
	"crypto/rand"
	"encoding/hex"
)

// HeaderRequestID is the header that carries the request id in and out of every binary
// (the same value as contract.HeaderRequestID).
const HeaderRequestID = "X-Request-Id"

// MaxRequestIDLen bounds a caller's request id; longer ones are replaced, not truncated,
// so a log search for the caller's id never finds a different request.
const MaxRequestIDLen = 128

// NewRequestID returns a random request id (128 bits, hex).
func NewRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on supported platforms
	return hex.EncodeToString(b[:])
}

// ValidRequestID reports whether a caller's request id may be kept: 1 to MaxRequestIDLen
// printable ASCII characters without spaces, so it cannot forge log lines or headers.
func ValidRequestID(id string) bool {
	if id == "" || len(id) > MaxRequestIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; c <= 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
