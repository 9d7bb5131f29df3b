package catalog

import "github.com/google/uuid"

// Visible reports whether viewer (nil: no account) may see project p: a public project is
// everyone's, a private one its owner's alone. It is the one visibility rule of every face
// that names a project (REST /projects/:id and its filters, MCP, alert rule targets), so
// that a project is shown, refused or hidden the same way everywhere.
func Visible(p Project, viewer *uuid.UUID) bool {
	return p.Visibility == VisibilityPublic || viewer != nil && *viewer == p.OwnerID
}
