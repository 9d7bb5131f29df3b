package api

import (
	"context"

	"github.com/google/uuid"

	"github.com/sensorgate/sensorgate/gateway/catalog"
	"github.com/sensorgate/sensorgate/gateway/sensorquery"
	"github.com/sensorgate/sensorgate/pkg/contract"
)

// OwnProjects is what GET /projects/my gives an owner's keys (first page, largest limit),
// for the account dashboard's GET /account/api/projects: the same view, from one place.
func OwnProjects(st catalog.Store) func(ctx context.Context, owner uuid.UUID) (any, error) {
	return func(ctx context.Context, owner uuid.UUID) (any, error) {
		f := catalog.ProjectFilter{Page: 1, Limit: sensorquery.MaxListLimit, ViewerID: owner, OwnerID: &owner}
		ps, total, err := st.ListProjects(ctx, f)
		if err != nil {
			return nil, err
		}
		out := projectList{Projects: make([]catalog.ProjectRecord, len(ps)), Pagination: contract.NewPagination(f.Page, f.Limit, total)}
		for i := range ps {
			out.Projects[i] = ps[i].Record()
		}
		return out, nil
	}
}
