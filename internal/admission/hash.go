package admission

import (
	"fmt"
	"math/bits"
)

// Block hashing, after vLLM's automatic prefix caching (docs/admission.md):
// a prompt is cut into full blocks of blockSize tokens (a trailing partial
// block is never cached, so it gets no hash), and block j's hash covers
// block j−1's hash and block j's tokens. Two prompts therefore share the
// hash of block j exactly when they share every token up to the end of
// block j, and a lookup can stop at the first block it does not find.
//
// The hash is not vLLM's (SHA-256 or Python's hash over the token tuple):
// the index lives in the router and only has to agree with itself. It is a
// word-at-a-time multiply–rotate mix over the parent hash and the tokens,
// closed by MurmurHash3's 64-bit finaliser (fmix64, Appleby 2011) over the
// block: fast (about a nanosecond per token), deterministic across
// processes and platforms, and not cryptographic — a tenant who can choose
// its tokens can collide blocks on purpose, which costs it only a wrong
// cache estimate.

const (
	hashSeed  = 0x9e3779b97f4a7c15 // 2⁶⁴/φ: the chain's root "parent"
	hashPrime = 0x9e3779b185ebca87 // xxHash64's PRIME64_1, odd
)

// Hashes appends to dst[:0] the chained hashes of the full blocks of
// tokens and returns it: len(tokens)/blockSize hashes. With a dst of
// sufficient capacity it does not allocate. blockSize must be positive.
func Hashes(tokens []uint32, blockSize int, dst []uint64) []uint64 {
	if blockSize <= 0 {
		panic(fmt.Sprintf("admission: Hashes with block size %d", blockSize))
	}
	dst = dst[:0]
	parent := uint64(hashSeed)
	for start := 0; start+blockSize <= len(tokens); start += blockSize {
		h := parent
		for _, t := range tokens[start : start+blockSize] {
			h = bits.RotateLeft64((h^uint64(t))*hashPrime, 31)
		}
		parent = fmix64(h ^ uint64(blockSize))
		dst = append(dst, parent)
	}
	return dst
}

// fmix64 is MurmurHash3's 64-bit finaliser: every input bit affects every
// output bit (avalanche).
func fmix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
