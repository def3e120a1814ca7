package sim

import "math"

// histogram collects latencies (seconds) too numerous to keep one by one
// (every output token's interval) in log-linear buckets: per power of two,
// 1 024 buckets of equal width, so a bucket spans at most 0.1 % of its
// values. The mean is exact; a percentile is the mean of its bucket (exact
// when the bucket holds one value, else within 0.1 %).
type histogram struct {
	buckets []histBucket
	n       int64
	sum     float64
}

// histBucket is a bucket's count and sum, side by side: an add touches
// one cache line of a histogram too large for the cache.
type histBucket struct {
	count int64
	sum   float64
}

const (
	histSubBits = 10  // 1 024 buckets per power of two
	histMinExp  = -20 // 2^-20 s ≈ 1 µs: smaller values share the first bucket
	histMaxExp  = 40  // 2^40 s: larger values share the last bucket
)

func histIndex(x float64) int {
	if !(x > 0x1p-20) {
		return 0
	}
	if x >= 0x1p40 {
		return (histMaxExp-histMinExp)<<histSubBits - 1
	}
	b := math.Float64bits(x)
	exp := int(b>>52&0x7ff) - 1023
	sub := int(b >> (52 - histSubBits) & (1<<histSubBits - 1))
	return (exp-histMinExp)<<histSubBits | sub
}

func (h *histogram) add(x float64, n int) {
	if n <= 0 {
		return
	}
	i := histIndex(x)
	if i >= len(h.buckets) {
		grow := max(i+1, 2*len(h.buckets)) - len(h.buckets)
		h.buckets = append(h.buckets, make([]histBucket, grow)...)
	}
	b := &h.buckets[i]
	b.count += int64(n)
	b.sum += x * float64(n)
	h.n += int64(n)
	h.sum += x * float64(n)
}

// percentiles in ms: the mean, and the value of rank p·(n − 1) (rounded).
func (h *histogram) percentiles() Percentiles {
	if h.n == 0 {
		return Percentiles{}
	}
	q := func(p float64) float64 {
		rank := int64(math.Round(p * float64(h.n-1)))
		var seen int64
		for _, b := range h.buckets {
			seen += b.count
			if seen > rank {
				return 1000 * b.sum / float64(b.count)
			}
		}
		return 0 // not reached: the counts add up to n
	}
	return Percentiles{Mean: 1000 * h.sum / float64(h.n), P50: q(0.5), P90: q(0.9), P95: q(0.95), P99: q(0.99)}
}
