package admission

// table is a fixed-capacity hash map from uint64 keys to int32 slots: open
// addressing with linear probing, at most half full, and backward-shift
// deletion (Knuth, TAOCP vol. 3, §6.4, Algorithm R), so that it leaves no
// tombstones and never rehashes. Unlike a Go map under steady insert/delete
// churn, it never allocates after it is made, and it iterates nothing, so
// it is deterministic.
type table struct {
	keys []uint64
	vals []int32 // -1: empty
	mask uint64
}

// newTable returns a table for up to n keys.
func newTable(n int) table {
	size := 2
	for size < 2*n {
		size *= 2
	}
	t := table{keys: make([]uint64, size), vals: make([]int32, size), mask: uint64(size - 1)} //nolint:gosec // size ≥ 2
	for i := range t.vals {
		t.vals[i] = -1
	}
	return t
}

// home is key's first probe position. Keys may be small integers (prefix
// groups), so they are mixed first.
func (t *table) home(key uint64) uint64 { return fmix64(key) & t.mask }

// get returns key's value, or -1.
func (t *table) get(key uint64) int32 {
	for i := t.home(key); ; i = (i + 1) & t.mask {
		v := t.vals[i]
		if v < 0 || t.keys[i] == key {
			return v
		}
	}
}

// put sets key's value; the caller keeps the table at most half full.
func (t *table) put(key uint64, val int32) {
	i := t.home(key)
	for t.vals[i] >= 0 && t.keys[i] != key {
		i = (i + 1) & t.mask
	}
	t.keys[i], t.vals[i] = key, val
}

// del removes key, if present, and shifts the entries of its probe run back
// so that every remaining key stays reachable from its home.
func (t *table) del(key uint64) {
	i := t.home(key)
	for t.keys[i] != key || t.vals[i] < 0 {
		if t.vals[i] < 0 {
			return
		}
		i = (i + 1) & t.mask
	}
	for j := (i + 1) & t.mask; t.vals[j] >= 0; j = (j + 1) & t.mask {
		// The entry at j may move to the hole at i when its home is not in
		// the cyclic range (i, j].
		h := t.home(t.keys[j])
		if (j-h)&t.mask >= (j-i)&t.mask {
			t.keys[i], t.vals[i] = t.keys[j], t.vals[j]
			i = j
		}
	}
	t.vals[i] = -1
}
