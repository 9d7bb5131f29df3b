package store

import "sync"

// countCache keeps exact list totals and distinct-value lists of one catalog generation.
// When the generation moves (a Sync changed sensors) the whole cache is stale and dropped;
// when it is full it is dropped too, which is cheap compared with tracking recency and
// only costs a recount.
type countCache struct {
	mu    sync.Mutex
	max   int
	gen   int64
	ints  map[string]int
	lists map[string][]string
}

func newCountCache(max int) *countCache {
	return &countCache{max: max, ints: map[string]int{}, lists: map[string][]string{}}
}

// at switches the cache to generation gen; the caller holds mu.
func (c *countCache) at(gen int64) {
	if gen != c.gen || len(c.ints)+len(c.lists) >= c.max {
		c.gen = gen
		c.ints = map[string]int{}
		c.lists = map[string][]string{}
	}
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
	if gen < c.gen {
		return // a slower reader of an older generation
	}
	c.at(gen)
	c.ints[key] = n
}

func (c *countCache) getList(gen int64, key string) ([]string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen != c.gen {
		return nil, false
	}
	v, ok := c.lists[key]
	return append([]string(nil), v...), ok
}

func (c *countCache) putList(gen int64, key string, v []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if gen < c.gen {
		return
	}
	c.at(gen)
	c.lists[key] = append([]string(nil), v...)
}
