package tuner

import (
	"math"

	"github.com/llm-d-incubation/wva/internal/queueing"
)

// maxDim is the most parameters a service model has.
const maxDim = queueing.MaxParams

// vec and square are the robust strategy's state and covariance: at most
// four log-parameters, held in fixed arrays so that a steady-state cycle
// allocates nothing (issue 30). Only the first n entries are used.
type (
	vec    [maxDim]float64
	square [maxDim][maxDim]float64
)

// cholesky factors the leading n×n block of a symmetric a as L·Lᵀ. It
// reports false unless a is positive-definite.
func cholesky(a square, n int) (square, bool) {
	var l square
	for j := range n {
		d := a[j][j]
		for k := range j {
			d -= l[j][k] * l[j][k]
		}
		if !(d > 0) || math.IsInf(d, 0) {
			return l, false
		}
		l[j][j] = math.Sqrt(d)
		for i := j + 1; i < n; i++ {
			s := a[i][j]
			for k := range j {
				s -= l[i][k] * l[j][k]
			}
			l[i][j] = s / l[j][j]
		}
	}
	return l, true
}

// conditioned reports whether the factored matrix's condition estimate —
// the squared ratio of L's largest to smallest diagonal entry — is at most
// maxCondition.
func (m square) conditioned(n int) bool {
	lo, hi := math.Inf(1), 0.0
	for i := range n {
		lo, hi = math.Min(lo, m[i][i]), math.Max(hi, m[i][i])
	}
	return sq(hi/lo) <= maxCondition
}

// maxCondition bounds the condition of every matrix the robust strategy
// inverts (the kalman package's bound).
const maxCondition = 1e12

// solve returns x with L·Lᵀ·x = b, m being the factor L.
func (m square) solve(b vec, n int) vec {
	var y vec
	for i := range n {
		s := b[i]
		for k := range i {
			s -= m[i][k] * y[k]
		}
		y[i] = s / m[i][i]
	}
	for i := n - 1; i >= 0; i-- {
		s := y[i]
		for k := i + 1; k < n; k++ {
			s -= m[k][i] * y[k]
		}
		y[i] = s / m[i][i]
	}
	return y
}

// inverse returns (L·Lᵀ)⁻¹, symmetric, m being the factor L.
func (m square) inverse(n int) square {
	var inv square
	for c := range n {
		var e vec
		e[c] = 1
		col := m.solve(e, n)
		for r := range n {
			inv[r][c] = col[r]
		}
	}
	for i := range n {
		for j := i + 1; j < n; j++ {
			v := (inv[i][j] + inv[j][i]) / 2
			inv[i][j], inv[j][i] = v, v
		}
	}
	return inv
}

// quad returns dᵀ·M·d over the leading n entries.
func (m square) quad(d vec, n int) float64 {
	s := 0.0
	for i := range n {
		for j := range n {
			s += d[i] * m[i][j] * d[j]
		}
	}
	return s
}

// plusDiag returns m with v added to each of its first n diagonal entries.
func (m square) plusDiag(v float64, n int) square {
	for i := range n {
		m[i][i] += v
	}
	return m
}

// rows returns the leading n×n block as rows (allocates).
func (m square) rows(n int) [][]float64 {
	var view [maxDim][]float64
	for i := range n {
		view[i] = m[i][:n]
	}
	return cloneRows(view[:n])
}

// cloneRows copies a matrix given as rows (of any lengths, as a record
// read from JSON may hold them) into one allocation for the rows. As a
// row-by-row copy would: the result is never nil, an empty row is nil.
func cloneRows(m [][]float64) [][]float64 {
	total := 0
	for _, row := range m {
		total += len(row)
	}
	out := make([][]float64, len(m))
	flat := make([]float64, total)
	at := 0
	for i, row := range m {
		if len(row) == 0 {
			continue
		}
		out[i] = flat[at : at+len(row) : at+len(row)]
		copy(out[i], row)
		at += len(row)
	}
	return out
}

// vecOf copies a slice into a vec.
func vecOf(v []float64) vec {
	var x vec
	copy(x[:], v)
	return x
}
