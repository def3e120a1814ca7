package server

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
)

// freeListModel drives a KV cache's free list directly and keeps what a
// plain list would hold: the free blocks, least recently freed first.
type freeListModel struct {
	c     *kvCache
	order []int32 // the free blocks, least recently freed first
	held  []int32
}

func newFreeListModel(n int) *freeListModel {
	m := &freeListModel{c: newKVCache(n, 16), order: make([]int32, n)}
	for i := range m.order {
		m.order[i] = int32(i)
	}
	return m
}

// release: held block i's last holder lets go.
func (m *freeListModel) release(i int) {
	b := m.held[i]
	m.held = slices.Delete(m.held, i, i+1)
	m.c.blocks[b].ref = 0
	m.c.pushFree(b)
	m.order = append(m.order, b)
}

// hit: a cache hit takes free block i off the list.
func (m *freeListModel) hit(i int) {
	b := m.order[i]
	m.order = slices.Delete(m.order, i, i+1)
	m.c.take(b)
	m.held = append(m.held, b)
}

// evict: an allocation takes the least recently freed block, which then
// computes shared-prefix content or not.
func (m *freeListModel) evict(shared bool) error {
	b := m.c.pop()
	if b != m.order[0] {
		return fmt.Errorf("popped %d, want %d", b, m.order[0])
	}
	if x, ok := m.c.byPrefix[prefixBit|blockKey(b)]; ok && x == b {
		return fmt.Errorf("evicted block %d still indexed", b)
	}
	m.order = m.order[1:]
	m.held = append(m.held, b)
	if shared {
		k := prefixBit | blockKey(b)
		m.c.blocks[b].key = k
		m.c.byPrefix[k] = b
	}
	return nil
}

// check compares the ring's live entries with the plain list.
func (m *freeListModel) check() error {
	c := m.c
	var live []int32
	for p := c.freeHead; p != c.freeTail; p++ {
		e := c.free[c.slot(p)]
		if e == freeStale {
			continue
		}
		b := e &^ freeShared
		if c.blocks[b].pos != p || (e&freeShared != 0) != (c.blocks[b].key&prefixBit != 0) {
			return fmt.Errorf("entry %d at %d, block at %d, key %x", e, p, c.blocks[b].pos, c.blocks[b].key)
		}
		live = append(live, b)
	}
	if !slices.Equal(live, m.order) || c.nFree != len(m.order) {
		return fmt.Errorf("free list %v (%d), want %v", live, c.nFree, m.order)
	}
	if n := len(c.blocks); len(c.free) > 2<<bits.Len(uint(n-1)) { // twice the power of two ≥ n
		return fmt.Errorf("a ring of %d", len(c.free))
	}
	return nil
}

// TestFreeListOrder: the free list's ring gives blocks out in release
// order, least recently freed first, as a plain list would, while blocks
// leave it from the middle (cache hits) and it grows and compacts; its
// entries' shared-prefix flags follow the blocks' content, and evicting
// shared-prefix content takes it out of the index.
func TestFreeListOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{1, 2, 5, 8, 13, 64} {
		m := newFreeListModel(n)
		for step := range 20000 {
			var err error
			switch op := rng.IntN(3); {
			case op == 0 && len(m.held) > 0:
				m.release(rng.IntN(len(m.held)))
			case op == 1 && len(m.order) > 0:
				m.hit(rng.IntN(len(m.order)))
			case len(m.order) > 0:
				err = m.evict(rng.IntN(2) == 0)
			}
			if err == nil {
				err = m.check()
			}
			if err != nil {
				t.Fatalf("%d blocks, step %d: %v", n, step, err)
			}
		}
	}
}
