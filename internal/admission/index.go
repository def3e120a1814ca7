package admission

import "fmt"

// DefaultIndexCapacity is the endpoint picker's default LRU capacity per
// server (the Gateway API Inference Extension's prefix-cache plugin,
// lruCapacityPerServer: 31 250 blocks; docs/admission.md).
const DefaultIndexCapacity = 31250

// maxIndexCapacity bounds the blocks per instance (slots are int32; 2²⁴
// blocks of 16 tokens is 268 M tokens, far beyond any server's KV cache).
const maxIndexCapacity = 1 << 24

// Index is the router's estimate of which instance holds which prompt
// blocks, after the endpoint picker's prefix-cache plugin: it remembers the
// block hashes of the requests it routed to each instance, at most a fixed
// number of blocks per instance, evicting the least recently routed. It is
// an estimate: the servers evict on their own, and the index never hears of
// it. The router's prefix scorer and the admission policy read the same
// index, with the hashes computed once per request (Hashes).
//
// Record and Match do not allocate once an instance's table exists (its
// first Record allocates it, about 40 bytes per block of capacity). An Index
// is not safe for concurrent use.
type Index struct {
	capacity  int
	instances map[int]*lru
}

// NewIndex returns an index that remembers up to capacity blocks per
// instance (0 means DefaultIndexCapacity).
func NewIndex(capacity int) (*Index, error) {
	if capacity < 0 || capacity > maxIndexCapacity {
		return nil, &FieldError{Path: "index.capacity", Msg: fmt.Sprintf("must be in [0, %d] blocks (0 means the default %d), got %d",
			maxIndexCapacity, DefaultIndexCapacity, capacity)}
	}
	return &Index{capacity: or(capacity, DefaultIndexCapacity), instances: map[int]*lru{}}, nil
}

// Capacity is the number of blocks remembered per instance.
func (x *Index) Capacity() int { return x.capacity }

// Record notes that instance now holds the blocks hashes (a request's
// chained hashes, routed there). They become the most recently used, the
// first block most of all: eviction takes a chain from its end, as vLLM
// frees a request's blocks last to first, so that a shared prefix outlives
// the suffixes that hang from it. A chain longer than the capacity keeps
// its first Capacity blocks.
func (x *Index) Record(instance int, hashes []uint64) {
	l := x.instances[instance]
	if l == nil {
		l = newLRU(x.capacity)
		x.instances[instance] = l
	}
	if len(hashes) > x.capacity {
		hashes = hashes[:x.capacity]
	}
	for i := len(hashes) - 1; i >= 0; i-- {
		l.touch(hashes[i])
	}
}

// Match returns the number of leading blocks of hashes that instance holds:
// it stops at the first block it does not hold (a chain with a gap cannot be
// reused past the gap). It changes nothing.
func (x *Index) Match(hashes []uint64, instance int) (blocks int) {
	l := x.instances[instance]
	if l == nil {
		return 0
	}
	for _, h := range hashes {
		if l.tab.get(h) < 0 {
			break
		}
		blocks++
	}
	return blocks
}

// Len is the number of blocks the index remembers for instance.
func (x *Index) Len(instance int) int {
	if l := x.instances[instance]; l != nil {
		return l.n
	}
	return 0
}

// Forget drops everything remembered for instance (it was deleted).
func (x *Index) Forget(instance int) { delete(x.instances, instance) }

// lru is one instance's blocks: a table from hash to slot and a doubly
// linked list of slots, most recently used first.
type lru struct {
	tab        table
	keys       []uint64
	prev, next []int32
	head, tail int32 // -1 when empty
	n          int
}

func newLRU(capacity int) *lru {
	return &lru{tab: newTable(capacity), keys: make([]uint64, capacity),
		prev: make([]int32, capacity), next: make([]int32, capacity), head: -1, tail: -1}
}

// touch makes h the most recently used key, adding it (and evicting the
// least recently used key when full) if it is new. It returns h's slot and
// whether h is new there.
func (l *lru) touch(h uint64) (slot int32, fresh bool) {
	s := l.tab.get(h)
	switch {
	case s >= 0:
		l.unlink(s)
		l.pushFront(s)
		return s, false
	case l.n < len(l.keys):
		s = int32(l.n) //nolint:gosec // n < capacity, an int32 table size
		l.n++
		l.keys[s] = h
		l.tab.put(h, s)
	default:
		s = l.tail
		l.unlink(s)
		l.tab.del(l.keys[s])
		l.keys[s] = h
		l.tab.put(h, s)
	}
	l.pushFront(s)
	return s, true
}

func (l *lru) unlink(s int32) {
	p, n := l.prev[s], l.next[s]
	if p >= 0 {
		l.next[p] = n
	} else {
		l.head = n
	}
	if n >= 0 {
		l.prev[n] = p
	} else {
		l.tail = p
	}
}

func (l *lru) pushFront(s int32) {
	l.prev[s], l.next[s] = -1, l.head
	if l.head >= 0 {
		l.prev[l.head] = s
	} else {
		l.tail = s
	}
	l.head = s
}
