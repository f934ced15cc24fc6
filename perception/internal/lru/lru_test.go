package lru

import (
	"fmt"
	"slices"
	"testing"
)

func keys(c *Cache[string, int]) []string {
	var out []string
	for k := range c.All() {
		out = append(out, k)
	}
	return out
}

func TestEvictsLeastRecentlyUsed(t *testing.T) {
	c := New[string, int](3)
	for i, k := range []string{"a", "b", "c"} {
		if _, ev := c.Put(k, i); ev {
			t.Fatalf("evicted while filling at %s", k)
		}
	}
	if v, _, _ := c.Use("a", func() int { return -1 }); v != 0 {
		t.Errorf("Use of a kept key made a new value %d", v)
	}
	gone, ev := c.Put("d", 3) // b is now the least recently used
	if !ev || gone != "b" {
		t.Errorf("evicted %q %v, want b", gone, ev)
	}
	if got := keys(c); !slices.Equal(got, []string{"d", "a", "c"}) {
		t.Errorf("order %v", got)
	}
	if _, gone, ev := c.Use("e", func() int { return 4 }); !ev || gone != "c" {
		t.Errorf("Use evicted %q %v, want c", gone, ev)
	}
	if _, ok := c.Get("c"); ok {
		t.Error("evicted key still found")
	}
	if !c.Remove("a") || c.Remove("a") || c.Len() != 2 {
		t.Errorf("Remove: len %d", c.Len())
	}
	if k, v, ok := c.Oldest(); !ok || k != "d" || v != 3 {
		t.Errorf("Oldest %q %d %v", k, v, ok)
	}
}

// A flood of distinct keys never grows the cache past its bound and keeps
// the newest keys.
func TestFloodBounded(t *testing.T) {
	c := New[string, int](16)
	evictions := 0
	for i := range 5000 {
		if _, ev := c.Put(fmt.Sprint(i), i); ev {
			evictions++
		}
		if c.Len() > 16 {
			t.Fatalf("%d entries after %d puts", c.Len(), i+1)
		}
	}
	if evictions != 5000-16 {
		t.Errorf("%d evictions", evictions)
	}
	if _, ok := c.Get("4999"); !ok {
		t.Error("newest key evicted")
	}
	if c.order.Len() != 16 {
		t.Errorf("list holds %d elements", c.order.Len())
	}
}
