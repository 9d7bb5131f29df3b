package obs

import (
	"encoding/binary"
	"encoding/hex"
	"math/rand/v2"
)

// HeaderRequestID is the header that carries the request id in and out of every binary
// (the same value as contract.HeaderRequestID).
const HeaderRequestID = "X-Request-Id"

// MaxRequestIDLen bounds a caller's request id; longer ones are replaced, not truncated,
// so a log search for the caller's id never finds a different request.
const MaxRequestIDLen = 128

// NewRequestID returns a random request id (128 bits, hex).
//
// A request id must be unique, not secret: it is echoed to the caller and written in every
// log line. So it comes from math/rand/v2's per-thread ChaCha8 generator (seeded by the
// runtime from the OS), which costs no system call and no lock, instead of crypto/rand,
// which the gateway used to pay on every request. 128 random bits make a collision as
// unlikely as with crypto/rand.
func NewRequestID() string {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], rand.Uint64())
	binary.LittleEndian.PutUint64(b[8:], rand.Uint64())
	var out [32]byte
	hex.Encode(out[:], b[:])
	return string(out[:]) // one allocation: the string itself
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
