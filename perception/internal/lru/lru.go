// Package lru is the bounded table perception and vision keep per device:
// a map with a recency order, so that a new key past the bound evicts the
// least recently used one in constant time. Device ids come from callers
// on an unauthenticated LAN, so every per-device table needs this bound and
// a scan of the whole table per new id would make a flood quadratic.
//
// A Cache is not safe for concurrent use; its owner holds its own lock.
package lru

import (
	"container/list"
	"iter"
)

// Cache maps keys to values, keeping at most its limit of them.
type Cache[K comparable, V any] struct {
	max   int
	items map[K]*list.Element
	order *list.List // front: most recently used
}

type item[K comparable, V any] struct {
	key K
	val V
}

// New returns an empty cache keeping at most limit entries (at least 1).
func New[K comparable, V any](limit int) *Cache[K, V] {
	return &Cache[K, V]{max: max(1, limit), items: map[K]*list.Element{}, order: list.New()}
}

// Len reports how many entries are kept.
func (c *Cache[K, V]) Len() int { return len(c.items) }

// Get returns key's value without changing its recency.
func (c *Cache[K, V]) Get(key K) (V, bool) {
	if el, ok := c.items[key]; ok {
		return el.Value.(*item[K, V]).val, true
	}
	var zero V
	return zero, false
}

// Put stores val under key as the most recently used entry. When that adds
// a key to a full cache, the least recently used entry is removed and its
// key returned with evicted true.
func (c *Cache[K, V]) Put(key K, val V) (gone K, evicted bool) {
	if el, ok := c.items[key]; ok {
		el.Value.(*item[K, V]).val = val
		c.order.MoveToFront(el)
		return gone, false
	}
	gone, evicted = c.makeRoom()
	c.items[key] = c.order.PushFront(&item[K, V]{key, val})
	return gone, evicted
}

// Use returns key's value, creating it with mk when absent, and marks it
// the most recently used; like Put it may evict the least recently used
// entry to make room.
func (c *Cache[K, V]) Use(key K, mk func() V) (val V, gone K, evicted bool) {
	if el, ok := c.items[key]; ok {
		c.order.MoveToFront(el)
		return el.Value.(*item[K, V]).val, gone, false
	}
	val = mk()
	gone, evicted = c.Put(key, val)
	return val, gone, evicted
}

func (c *Cache[K, V]) makeRoom() (gone K, evicted bool) {
	if len(c.items) < c.max {
		return gone, false
	}
	k, _, _ := c.Oldest()
	c.Remove(k)
	return k, true
}

// Remove deletes key; it reports whether it was there.
func (c *Cache[K, V]) Remove(key K) bool {
	el, ok := c.items[key]
	if ok {
		c.order.Remove(el)
		delete(c.items, key)
	}
	return ok
}

// Oldest returns the least recently used entry.
func (c *Cache[K, V]) Oldest() (key K, val V, ok bool) {
	el := c.order.Back()
	if el == nil {
		return key, val, false
	}
	it := el.Value.(*item[K, V])
	return it.key, it.val, true
}

// All yields every entry, most recently used first. The cache must not
// change during the iteration.
func (c *Cache[K, V]) All() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		for el := c.order.Front(); el != nil; el = el.Next() {
			it := el.Value.(*item[K, V])
			if !yield(it.key, it.val) {
				return
			}
		}
	}
}
