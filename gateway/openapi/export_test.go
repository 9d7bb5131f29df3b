package openapi

import "bytes"

// YAML returns the document as written (a copy, so a test cannot change the embedded one):
// the input of the TypeScript client generator's test.
func YAML() []byte { return bytes.Clone(documentYAML) }
