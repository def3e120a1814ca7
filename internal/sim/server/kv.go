package server

import "math/bits"

// kvCache is a replica's paged KV cache, after vLLM's block manager (and
// BLIS's model of it): kvBlocks blocks of blockSize token slots each,
// reference-counted. A request holds the blocks of its computed tokens in
// order. A block whose last holder lets go keeps its content on a free list
// ordered by release time; allocation takes the least recently freed block
// (evicting its content), and a request whose prompt starts with content
// still resident takes those blocks instead of recomputing them (prefix
// caching). The same mechanism serves shared prompt prefixes and the
// recompute of a preempted request.
//
// Content is identified by a block key: a full block of a shared prefix
// (group, block index) is the same content for every request of the group;
// any other full prompt block is its request's own. Only full prompt blocks
// carry a key (vLLM hashes full blocks; output tokens are not reused here,
// as in BLIS, where a preempted request regenerates them).
//
// The free list is a queue in release order, not a linked list: a ring of
// entries at positions freeHead (the least recently freed) to freeTail,
// each position's slot in the ring its value modulo the ring's size (a
// power of two). A pop reads the next entry in sequence instead of
// chasing links across the blocks, and the entry tells what the pop must
// know of the block's content, so that it writes the block without first
// reading it (with large caches, reading a block is a cache miss). A block
// taken off the list from the middle (a cache hit) leaves a stale entry
// behind, which pops skip.
type kvCache struct {
	bs                 int
	blocks             []kvBlock
	free               []int32 // the ring: block ids (| freeShared), or freeStale
	freeHead, freeTail uint32  // positions, wrapping around
	nFree              int
	byPrefix           map[blockKey]int32 // shared-prefix content → its block
	hitBuf             []int32
	head               headMemo
}

// A free-list entry is a block id, flagged freeShared when the block holds
// shared-prefix content (indexed in byPrefix), or freeStale.
const (
	freeShared = int32(1) << 30 // above MaxKVBlocks' ids
	freeStale  = int32(-1)
)

type kvBlock struct {
	key blockKey // content, 0 for none
	ref int32
	pos uint32 // while free, the position of its entry in the free list
}

// headMemo is the cached prefix of the request at the head of the waiting
// queue, which the scheduler looks up every iteration while the cache has
// no room for it (head-of-line blocking): q's cached blocks (what
// cachedPrefix would return) and how many of them are free. The cache
// keeps it exact as blocks change (kv.go's touch, cut and forget), so a
// blocked head costs no walk over its prompt's blocks.
type headMemo struct {
	q        *Request // nil: no memo
	hits     []int32
	freeHits int
}

// free: no request holds the block, so it is on the free list.
func (k *kvBlock) free() bool { return k.ref == 0 }

// blockKey names a full prompt block's content.
type blockKey uint64

const prefixBit = blockKey(1) << 63

// keyOf is the content key of block j of q's prompt, or 0 when the block is
// not a full prompt block.
func keyOf(q *Request, j, bs int) blockKey {
	if (j+1)*bs > q.Input {
		return 0
	}
	if q.Prefix >= 0 && (j+1)*bs <= q.PrefixTokens {
		return prefixBit | blockKey(q.Prefix)<<24 | blockKey(j) //nolint:gosec // prefix ≥ 0 (checked above) and j ≥ 0
	}
	return blockKey(q.ID)<<24 | blockKey(j) //nolint:gosec // request ids and block indices count up from 0
}

// keyIndex is the block index j of a content key: a block with content k
// can only stand at position keyIndex(k) of a request's cached prefix.
func keyIndex(k blockKey) int { return int(k & (1<<24 - 1)) }

func newKVCache(nBlocks, bs int) *kvCache {
	ring := 1 << bits.Len(uint(max(nBlocks, 1)-1)) // the power of two ≥ nBlocks
	c := &kvCache{bs: bs, blocks: make([]kvBlock, nBlocks), free: make([]int32, ring), byPrefix: map[blockKey]int32{}}
	for i := range c.blocks {
		c.pushFree(int32(i))
	}
	return c
}

// used is the number of blocks held by some request (vLLM's KV-cache usage
// counts cached but free blocks as free).
func (c *kvCache) used() int { return len(c.blocks) - c.nFree }

func (c *kvCache) usage() float64 {
	if len(c.blocks) == 0 {
		return 0
	}
	return float64(c.used()) / float64(len(c.blocks))
}

// slot is the ring index of free-list position p.
func (c *kvCache) slot(p uint32) uint32 { return p & uint32(len(c.free)-1) } //nolint:gosec // a ring of at most 4 × MaxKVBlocks

// pushFree puts the unreferenced block b at the tail of the free list.
func (c *kvCache) pushFree(b int32) {
	if c.freeTail-c.freeHead == uint32(len(c.free)) { //nolint:gosec // as in slot
		c.resizeFree()
	}
	k := &c.blocks[b]
	k.pos = c.freeTail
	e := b
	if k.key&prefixBit != 0 {
		e |= freeShared
	}
	c.free[c.slot(c.freeTail)] = e
	c.freeTail++
	c.nFree++
	c.touch(b, 1)
}

// resizeFree makes room in the full ring: it drops the stale entries when
// they are at least half of it (renumbering the others' positions), else
// doubles it (positions stay). A ring doubles at most once (the free
// blocks never fill more than half of twice the blocks' power of two),
// and a compaction leaves half the ring empty, for as many pushes: O(1)
// per push.
func (c *kvCache) resizeFree() {
	n := len(c.free)
	if stale := n - c.nFree; stale < n/2 {
		ring := make([]int32, 2*n)
		for p := c.freeHead; p != c.freeTail; p++ {
			ring[p&uint32(2*n-1)] = c.free[c.slot(p)] //nolint:gosec // as in slot
		}
		c.free = ring
		return
	}
	live := make([]int32, 0, c.nFree)
	for p := c.freeHead; p != c.freeTail; p++ {
		if e := c.free[c.slot(p)]; e != freeStale {
			live = append(live, e)
		}
	}
	c.freeTail = c.freeHead
	for _, e := range live {
		c.blocks[e&^freeShared].pos = c.freeTail
		c.free[c.slot(c.freeTail)] = e
		c.freeTail++
	}
}

// take takes the free block b off the free list from anywhere (a cache
// hit: its entry goes stale) and gives it its first holder.
func (c *kvCache) take(b int32) {
	k := &c.blocks[b]
	c.free[c.slot(k.pos)] = freeStale
	c.nFree--
	c.touch(b, -1)
	k.ref = 1
}

// pop takes the least recently freed block, evicting its content. It
// reads the block only when the content matters to others: shared-prefix
// content leaves byPrefix, and the head's memo may hold the block (cut).
func (c *kvCache) pop() int32 {
	e := freeStale
	for e == freeStale {
		e = c.free[c.slot(c.freeHead)]
		c.freeHead++
	}
	b := e &^ freeShared
	if e&freeShared != 0 || c.head.q != nil {
		k := c.blocks[b].key
		if k != 0 {
			c.cut(b) // before b leaves the free list: cut counts it among the free hits
		}
		if e&freeShared != 0 && c.byPrefix[k] == b {
			delete(c.byPrefix, k)
		}
	}
	c.nFree--
	c.blocks[b] = kvBlock{ref: 1} // no content; pos is set when it is freed again
	return b
}

// cachedPrefix returns the blocks of q's prompt still resident from the
// start, stopping at the first miss (a hash chain): at most (input − 1) /
// blockSize of them, because the last prompt token is always computed to
// produce the first output token (vLLM's rule). The slice is reused.
func (c *kvCache) cachedPrefix(q *Request) []int32 {
	c.hitBuf = c.walkPrefix(q, c.hitBuf[:0])
	return c.hitBuf
}

// walkPrefix appends q's cached prefix (cachedPrefix) to hits.
func (c *kvCache) walkPrefix(q *Request, hits []int32) []int32 {
	for j := range (q.Input - 1) / c.bs {
		k := keyOf(q, j, c.bs)
		b := int32(-1)
		if k&prefixBit != 0 {
			if x, ok := c.byPrefix[k]; ok {
				b = x
			}
		} else if j < len(q.prevBlocks) {
			b = q.prevBlocks[j]
		}
		if b < 0 || c.blocks[b].key != k {
			break
		}
		hits = append(hits, b)
	}
	return hits
}

// headPrefix is cachedPrefix for q, the head of the waiting queue, and
// how many of those blocks are free, from the memo when it is q's.
func (c *kvCache) headPrefix(q *Request) (hits []int32, freeHits int) {
	m := &c.head
	if m.q != q {
		m.q, m.hits, m.freeHits = q, c.walkPrefix(q, m.hits[:0]), 0
		for _, b := range m.hits {
			if c.blocks[b].free() {
				m.freeHits++
			}
		}
	}
	return m.hits, m.freeHits
}

// memoAt tells whether the free block b (with content) is one of the
// memo's hits, and where.
func (c *kvCache) memoAt(b int32) (int, bool) {
	m := &c.head
	if m.q == nil {
		return 0, false
	}
	j := keyIndex(c.blocks[b].key)
	return j, j < len(m.hits) && m.hits[j] == b
}

// touch keeps the memo's count of free hits as block b joins (d = 1) or
// leaves (d = −1) the free list.
func (c *kvCache) touch(b int32, d int) {
	if c.blocks[b].key == 0 {
		return // not a cached block: no one's hit
	}
	if _, ok := c.memoAt(b); ok {
		c.head.freeHits += d
	}
}

// cut keeps the memo exact as the free block b loses its content: a
// run of cached blocks stops at the first one missing, so a memo that
// holds b ends before it. (Only b's own eviction can shorten a run: a
// request's own content is labelled by no one else, and a new block of
// the head's shared prefix, which could lengthen or change its run, drops
// the memo: forget.)
func (c *kvCache) cut(b int32) {
	j, ok := c.memoAt(b)
	if !ok {
		return
	}
	m := &c.head
	for _, x := range m.hits[j:] {
		if c.blocks[x].free() {
			m.freeHits--
		}
	}
	m.hits = m.hits[:j]
}

// forget drops the memo.
func (c *kvCache) forget() { c.head.q = nil }

// blocksFor is the number of blocks that hold n token slots.
func (c *kvCache) blocksFor(n int) int { return (n + c.bs - 1) / c.bs }

// admit gives a waiting request its cached blocks (hits, of which
// freeHits are free) and room for its first n tokens after them, or
// reports false and changes nothing.
func (c *kvCache) admit(q *Request, hits []int32, freeHits, n int) bool {
	start := len(hits) * c.bs
	fresh := c.blocksFor(start+n) - len(hits)
	need := fresh + freeHits // a cached free block leaves the free list too
	if need > c.nFree {
		return false
	}
	if c.head.q == q {
		c.forget() // q leaves the queue (hits stays readable: no walk refills it here)
	}
	if cap(q.blocks) == 0 {
		q.blocks = make([]int32, 0, c.blocksFor(q.Input+q.Output))
	}
	q.blocks = q.blocks[:0]
	for _, b := range hits {
		if c.blocks[b].free() {
			c.take(b)
		} else {
			c.blocks[b].ref++
		}
		q.blocks = append(q.blocks, b)
	}
	q.keyed = len(hits)
	for range fresh {
		q.blocks = append(q.blocks, c.pop())
	}
	c.label(q, start+n)
	return true
}

// room tells whether a running request's blocks have room for its next n
// tokens: most iterations' case, which callers check inline before grow.
func (c *kvCache) room(q *Request, n int) bool { return q.computed+n <= len(q.blocks)*c.bs }

// grow makes room for a running request's next n tokens (it holds
// q.computed), or reports false and changes nothing.
func (c *kvCache) grow(q *Request, n int) bool {
	if c.room(q, n) {
		return true // room in its last block (and its prompt blocks are labelled)
	}
	fresh := c.blocksFor(q.computed+n) - len(q.blocks)
	if fresh > c.nFree {
		return false
	}
	for range fresh {
		q.blocks = append(q.blocks, c.pop())
	}
	c.label(q, q.computed+n)
	return true
}

// label gives the prompt blocks that the first slots token slots fill
// their content key (at allocation, as BLIS hashes them: a request admitted
// later in the same iteration already finds them).
func (c *kvCache) label(q *Request, slots int) {
	if q.computed >= q.Input {
		return // decoding: every full prompt block has its key
	}
	full := min(slots, q.Input) / c.bs
	for ; q.keyed < full; q.keyed++ {
		b := q.blocks[q.keyed]
		k := keyOf(q, q.keyed, c.bs)
		c.blocks[b].key = k
		if k&prefixBit != 0 {
			c.byPrefix[k] = b
			if h := c.head.q; h != nil && keyOf(h, keyIndex(k), c.bs) == k {
				c.forget() // a block of the head's prefix: its run may now go further
			}
		}
	}
}

// release lets go of q's blocks, the last first, so that a request's
// leading blocks (the ones others share) are evicted last.
func (c *kvCache) release(q *Request) {
	for i := len(q.blocks) - 1; i >= 0; i-- {
		b := q.blocks[i]
		k := &c.blocks[b]
		k.ref--
		if k.ref == 0 {
			c.pushFree(b)
		}
	}
}

// prefixMatch is the leading run of q's shared-prefix blocks resident
// here, and its share of the prefix's blocks (the router's prefix scorer).
// A cached chain is evicted from its end, so the resident blocks are a
// leading run: found by binary search. The run is what the server's
// cachedPrefix finds for a request that was never preempted (a shared
// prefix is at most input − 1 tokens), so blocks × blockSize are the
// request's exactly cached tokens.
func (c *kvCache) prefixMatch(q *Request) (blocks int, share float64) {
	n := q.PrefixTokens / c.bs
	if n == 0 {
		return 0, 0
	}
	resident := func(j int) bool {
		k := keyOf(q, j, c.bs)
		b, ok := c.byPrefix[k]
		return ok && c.blocks[b].key == k
	}
	lo, hi := 0, n // blocks [0, lo) resident; [hi, n) not
	for lo < hi {
		mid := (lo + hi) / 2
		if resident(mid) {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, float64(lo) / float64(n)
}
