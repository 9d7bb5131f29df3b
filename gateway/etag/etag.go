// Package etag compares entity tags the way If-None-Match asks (RFC 9110 13.1.2): every
// conditional answer of the gateway (catalog, readings, formats, the explorer's files)
// uses this one comparison.
package etag

import "strings"

// Match applies If-None-Match's weak comparison: "*" or any listed tag whose opaque part
// equals tag's.
func Match(ifNoneMatch, tag string) bool {
	if ifNoneMatch == "" {
		return false
	}
	for t := range strings.SplitSeq(ifNoneMatch, ",") {
		t = strings.TrimSpace(t)
		if t == "*" || strings.TrimPrefix(t, "W/") == tag {
			return true
		}
	}
	return false
}
