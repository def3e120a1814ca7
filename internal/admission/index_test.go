package admission

import (
	"math/rand/v2"
	"testing"
)

// prompt returns n tokens drawn from rng.
func prompt(rng *rand.Rand, n int) []uint32 {
	t := make([]uint32, n)
	for i := range t {
		t[i] = rng.Uint32N(50000)
	}
	return t
}

func TestHashesChain(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	a := prompt(rng, 100)
	h := Hashes(a, 16, nil)
	if len(h) != 6 {
		t.Fatalf("%d hashes for 100 tokens in blocks of 16, want 6 (the partial block has none)", len(h))
	}
	if again := Hashes(a, 16, nil); !equal(h, again) {
		t.Error("Hashes is not deterministic")
	}
	// A prompt that shares the first 40 tokens shares the first 2 blocks'
	// hashes, and no later one (block 2 holds the divergent token 40).
	b := append(append([]uint32(nil), a[:40]...), prompt(rng, 60)...)
	hb := Hashes(b, 16, nil)
	for j := range 6 {
		if same := h[j] == hb[j]; same != (j < 2) {
			t.Errorf("block %d: shared hash %v, want %v", j, same, j < 2)
		}
	}
	// The same tokens in a block after a different parent hash differently:
	// the chain, not the block's content alone, names it.
	c := append(prompt(rng, 16), a[16:]...)
	hc := Hashes(c, 16, nil)
	if hc[0] == h[0] || hc[1] == h[1] || hc[5] == h[5] {
		t.Error("a block after a different first block hashes as before")
	}
	// The block size is part of the hash.
	if h8 := Hashes(a, 8, nil); h8[1] == h[0] {
		t.Error("two 8-token blocks hash like one 16-token block")
	}
	if len(Hashes(a[:15], 16, nil)) != 0 {
		t.Error("a prompt shorter than a block has a hash")
	}
}

func TestHashesReusesDst(t *testing.T) {
	tokens := prompt(rand.New(rand.NewPCG(2, 2)), 1024)
	dst := make([]uint64, 0, 64)
	if n := testing.AllocsPerRun(100, func() { dst = Hashes(tokens, 16, dst) }); n != 0 {
		t.Errorf("Hashes allocates %v times with room in dst", n)
	}
	if len(dst) != 64 {
		t.Errorf("%d hashes, want 64", len(dst))
	}
}

func TestHashesPanicsOnBlockSize(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for block size 0")
		}
	}()
	Hashes([]uint32{1}, 0, nil)
}

func TestIndexMatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	x, err := NewIndex(0)
	if err != nil {
		t.Fatal(err)
	}
	if x.Capacity() != DefaultIndexCapacity {
		t.Errorf("capacity %d", x.Capacity())
	}
	system := prompt(rng, 64) // a shared system prompt: 4 blocks
	a := append(append([]uint32(nil), system...), prompt(rng, 64)...)
	b := append(append([]uint32(nil), system...), prompt(rng, 64)...)
	ha, hb := Hashes(a, 16, nil), Hashes(b, 16, nil)
	x.Record(7, ha)
	cases := []struct {
		name     string
		hashes   []uint64
		instance int
		want     int
	}{
		{"the recorded prompt matches whole", ha, 7, 8},
		{"a prompt with the same system prompt matches it", hb, 7, 4},
		{"another instance holds nothing", ha, 8, 0},
		{"a gap stops the match", append([]uint64{ha[0], hb[5]}, ha[2:]...), 7, 1},
		{"no hashes", nil, 7, 0},
	}
	for _, c := range cases {
		if got := x.Match(c.hashes, c.instance); got != c.want {
			t.Errorf("%s: %d blocks, want %d", c.name, got, c.want)
		}
	}
	x.Forget(7)
	if x.Match(ha, 7) != 0 || x.Len(7) != 0 {
		t.Error("Forget left blocks behind")
	}
}

// TestIndexEvictsChainsFromTheirEnd: the LRU bound holds, and a chain
// loses its last blocks first, so its prefix still matches.
func TestIndexEvictsChainsFromTheirEnd(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	x, err := NewIndex(8)
	if err != nil {
		t.Fatal(err)
	}
	ha, hb, hc := Hashes(prompt(rng, 64), 16, nil), Hashes(prompt(rng, 64), 16, nil), Hashes(prompt(rng, 32), 16, nil)
	x.Record(0, ha)
	x.Record(0, hb)
	if x.Match(ha, 0) != 4 || x.Match(hb, 0) != 4 || x.Len(0) != 8 {
		t.Fatalf("full index: %d, %d, len %d", x.Match(ha, 0), x.Match(hb, 0), x.Len(0))
	}
	x.Record(0, hc) // evicts a's last two blocks, the least recently used
	if got := x.Match(ha, 0); got != 2 {
		t.Errorf("a after eviction: %d blocks, want its first 2", got)
	}
	if x.Match(hb, 0) != 4 || x.Match(hc, 0) != 2 || x.Len(0) != 8 {
		t.Errorf("b %d, c %d, len %d", x.Match(hb, 0), x.Match(hc, 0), x.Len(0))
	}
	x.Record(0, hb[:1]) // b's root is touched: a goes, then b's last block, not its root
	x.Record(0, Hashes(prompt(rng, 48), 16, nil))
	if x.Match(ha, 0) != 0 || x.Match(hb, 0) != 3 || x.Len(0) != 8 {
		t.Errorf("a %d, b %d, len %d", x.Match(ha, 0), x.Match(hb, 0), x.Len(0))
	}
	long := Hashes(prompt(rng, 16*20), 16, nil)
	x.Record(1, long)
	if x.Match(long, 1) != 8 || x.Len(1) != 8 {
		t.Errorf("a chain longer than the capacity keeps its first 8 blocks: %d", x.Match(long, 1))
	}
}

func TestIndexSteadyStateAllocatesNothing(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	x, err := NewIndex(256)
	if err != nil {
		t.Fatal(err)
	}
	chains := make([][]uint64, 64)
	for i := range chains {
		chains[i] = Hashes(prompt(rng, 512), 16, nil)
		x.Record(i%4, chains[i])
	}
	i := 0
	n := testing.AllocsPerRun(1000, func() {
		c := chains[i%len(chains)]
		x.Record(i%4, c)
		_ = x.Match(c, (i+1)%4)
		i++
	})
	if n != 0 {
		t.Errorf("Record+Match allocate %v times per run in steady state", n)
	}
}

// TestTableAgainstMap drives the open-addressing table with random inserts
// and deletes over a small key space (long probe runs, wrap-around) and
// checks it against a Go map.
func TestTableAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	const n = 50
	tab, model := newTable(n), map[uint64]int32{}
	for step := range 200000 {
		k := rng.Uint64N(3 * n)
		if rng.IntN(2) == 0 && len(model) < n {
			v := int32(step % 1000)
			tab.put(k, v)
			model[k] = v
		} else {
			tab.del(k)
			delete(model, k)
		}
		if step%997 == 0 {
			for k := range uint64(3 * n) {
				want, ok := model[k]
				if !ok {
					want = -1
				}
				if got := tab.get(k); got != want {
					t.Fatalf("step %d: key %d → %d, want %d", step, k, got, want)
				}
			}
		}
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
