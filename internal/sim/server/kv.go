package server

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
type kvCache struct {
	bs       int
	blocks   []kvBlock
	head     int32 // least recently freed (evicted first); -1 when none is free
	tail     int32
	nFree    int
	byPrefix map[blockKey]int32 // shared-prefix content → its block
	hitBuf   []int32
}

type kvBlock struct {
	key        blockKey // content, 0 for none
	ref        int32
	prev, next int32 // free-list links, -1 at the ends
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

func newKVCache(nBlocks, bs int) *kvCache {
	c := &kvCache{bs: bs, blocks: make([]kvBlock, nBlocks), head: -1, tail: -1, byPrefix: map[blockKey]int32{}}
	for i := range c.blocks {
		c.blocks[i] = kvBlock{prev: -1, next: -1}
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

func (c *kvCache) pushFree(b int32) {
	k := &c.blocks[b]
	k.prev, k.next = c.tail, -1
	if c.tail >= 0 {
		c.blocks[c.tail].next = b
	} else {
		c.head = b
	}
	c.tail = b
	c.nFree++
}

func (c *kvCache) unlinkFree(b int32) {
	k := &c.blocks[b]
	if k.prev >= 0 {
		c.blocks[k.prev].next = k.next
	} else {
		c.head = k.next
	}
	if k.next >= 0 {
		c.blocks[k.next].prev = k.prev
	} else {
		c.tail = k.prev
	}
	k.prev, k.next = -1, -1
	c.nFree--
}

// pop takes the least recently freed block, evicting its content.
func (c *kvCache) pop() int32 {
	b := c.head
	c.unlinkFree(b)
	k := &c.blocks[b]
	if k.key&prefixBit != 0 && c.byPrefix[k.key] == b {
		delete(c.byPrefix, k.key)
	}
	k.key, k.ref = 0, 1
	return b
}

// cachedPrefix returns the blocks of q's prompt still resident from the
// start, stopping at the first miss (a hash chain): at most (input − 1) /
// blockSize of them, because the last prompt token is always computed to
// produce the first output token (vLLM's rule). The slice is reused.
func (c *kvCache) cachedPrefix(q *Request) []int32 {
	c.hitBuf = c.hitBuf[:0]
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
		c.hitBuf = append(c.hitBuf, b)
	}
	return c.hitBuf
}

// blocksFor is the number of blocks that hold n token slots.
func (c *kvCache) blocksFor(n int) int { return (n + c.bs - 1) / c.bs }

// admit gives a waiting request its cached blocks (hits) and room for its
// first n tokens after them, or reports false and changes nothing.
func (c *kvCache) admit(q *Request, hits []int32, n int) bool {
	start := len(hits) * c.bs
	fresh := c.blocksFor(start+n) - len(hits)
	need := fresh
	for _, b := range hits {
		if c.blocks[b].free() {
			need++ // a cached free block leaves the free list too
		}
	}
	if need > c.nFree {
		return false
	}
	if cap(q.blocks) == 0 {
		q.blocks = make([]int32, 0, c.blocksFor(q.Input+q.Output))
	}
	q.blocks = q.blocks[:0]
	for _, b := range hits {
		if c.blocks[b].free() {
			c.unlinkFree(b)
		}
		c.blocks[b].ref++
		q.blocks = append(q.blocks, b)
	}
	q.keyed = len(hits)
	for range fresh {
		q.blocks = append(q.blocks, c.pop())
	}
	c.label(q, start+n)
	return true
}

// grow makes room for a running request's next n tokens (it holds
// q.computed), or reports false and changes nothing.
func (c *kvCache) grow(q *Request, n int) bool {
	if q.computed+n <= len(q.blocks)*c.bs {
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
