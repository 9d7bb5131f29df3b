package store

import (
	"sync"

	"github.com/google/uuid"
)

// countCache keeps what list queries learn about one catalog generation: exact totals,
// the ordered ids of filters with few matches, and the facets. When the
// generation moves (a Sync changed sensors) the whole cache is stale and dropped; when a
// part is full it is dropped too, which is cheap compared with tracking recency and only
// costs a recount.
type countCache struct {
	mu     sync.Mutex
	max    int // entries of ints
	maxIDs int // ids of all id lists together
	gen    int64
	ints   map[string]int
	ids    map[string][]uuid.UUID
	nIDs   int
	facets []facet // nil: not read for this generation
}

func newCountCache(max, maxIDs int) *countCache {
	return &countCache{max: max, maxIDs: maxIDs, ints: map[string]int{}, ids: map[string][]uuid.UUID{}}
}

// at switches the cache to generation gen; the caller holds mu. It reports false when gen
// is older than the cache's, whose values must then not be overwritten.
func (c *countCache) at(gen int64) bool {
	switch {
	case gen < c.gen:
		return false
	case gen > c.gen:
		c.gen = gen
		c.ints, c.ids, c.nIDs, c.facets = map[string]int{}, map[string][]uuid.UUID{}, 0, nil
	}
	if len(c.ints) >= c.max {
		c.ints = map[string]int{}
	}
	return true
}

func (c *countCache) get(gen int64, key string) (int, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return 0, false
	}
	n, ok := c.ints[key]
	return n, ok
}

func (c *countCache) put(gen int64, key string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at(gen) {
		c.ints[key] = n
	}
}

// getIDs returns the cached ordered ids of a filter; the slice is shared and read-only.
func (c *countCache) getIDs(gen int64, key string) ([]uuid.UUID, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return nil, false
	}
	v, ok := c.ids[key]
	return v, ok
}

func (c *countCache) putIDs(gen int64, key string, v []uuid.UUID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(v) > c.maxIDs || !c.at(gen) {
		return
	}
	if c.nIDs+len(v) > c.maxIDs {
		c.ids, c.nIDs = map[string][]uuid.UUID{}, 0
	}
	if old, ok := c.ids[key]; ok {
		c.nIDs -= len(old)
	}
	c.ids[key] = v
	c.nIDs += len(v)
}

func (c *countCache) getFacets(gen int64) ([]facet, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen || c.facets == nil {
		return nil, false
	}
	return c.facets, true
}

func (c *countCache) putFacets(gen int64, fs []facet) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if fs == nil {
		fs = []facet{}
	}
	if c.at(gen) {
		c.facets = fs
	}
}
