package admission

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomTriangular draws an upper-triangular G with a positive diagonal
// whose entries span scale orders of magnitude, as a calibrator's
// square-root information does.
func randomTriangular(rng *rand.Rand, scale float64) [3][3]float64 {
	var g [3][3]float64
	for i := range 3 {
		for j := i; j < 3; j++ {
			g[i][j] = math.Pow(10, scale*(rng.Float64()-0.5)) * rng.NormFloat64()
		}
		g[i][i] = math.Abs(g[i][i]) + 1e-3
	}
	return g
}

func information(g *[3][3]float64, z [3]float64) ([3][3]float64, [3]float64) {
	var j [3][3]float64
	var h [3]float64
	for a := range 3 {
		for b := range 3 {
			for k := range 3 {
				j[a][b] += g[k][a] * g[k][b]
			}
		}
		for k := range 3 {
			h[a] += g[k][a] * z[k]
		}
	}
	return j, h
}

// TestRotateInAddsTheRow: folding the row (a, b) in adds a·aᵀ to the
// information GᵀG and a·b to Gᵀz, and keeps G upper triangular with a
// positive diagonal.
func TestRotateInAddsTheRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 7))
	for trial := range 1000 {
		g := randomTriangular(rng, 4)
		z := [3]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		a := [3]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		b := rng.NormFloat64()
		j0, h0 := information(&g, z)
		rotateIn(&g, &z, a, b, 0)
		j1, h1 := information(&g, z)
		for p := range 3 {
			if !(g[p][p] > 0) || (p > 0 && g[p][0] != 0) || (p > 1 && g[p][1] != 0) {
				t.Fatalf("trial %d: G not upper triangular with a positive diagonal: %v", trial, g)
			}
			for q := range 3 {
				want := j0[p][q] + a[p]*a[q]
				if math.Abs(j1[p][q]-want) > 1e-12*(math.Abs(j0[p][p])+math.Abs(j0[q][q])+a[p]*a[p]+a[q]*a[q]) {
					t.Fatalf("trial %d: information[%d][%d] %v, want %v", trial, p, q, j1[p][q], want)
				}
			}
			if want := h0[p] + a[p]*b; math.Abs(h1[p]-want) > 1e-9*(1+math.Abs(want)) {
				t.Fatalf("trial %d: Gᵀz[%d] %v, want %v", trial, p, h1[p], want)
			}
		}
	}
}

// TestCovarianceInvertsInformation: covariance(G)·GᵀG = I, to the
// rounding of condition numbers up to 10⁹; its diagonal is variances(G);
// and predictionVariance(G, x) = xᵀPx.
func TestCovarianceInvertsInformation(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 7))
	for trial := range 1000 {
		g := randomTriangular(rng, 1)
		p := covariance(&g)
		j, _ := information(&g, [3]float64{})
		v := variances(&g)
		x := [3]float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		xpx := 0.0
		for a := range 3 {
			for b := range 3 {
				pj := 0.0
				for k := range 3 {
					pj += p[a][k] * j[k][b]
				}
				if want := float64(btoi(a == b)); math.Abs(pj-want) > 1e-6 {
					t.Fatalf("trial %d: (P·GᵀG)[%d][%d] = %v", trial, a, b, pj)
				}
				xpx += x[a] * p[a][b] * x[b]
			}
			if math.Abs(v[a]-p[a][a]) > 1e-12*p[a][a] {
				t.Fatalf("trial %d: variance %d %v, covariance's %v", trial, a, v[a], p[a][a])
			}
		}
		if got := predictionVariance(&g, x); math.Abs(got-xpx) > 1e-9*math.Abs(xpx)+1e-12 {
			t.Fatalf("trial %d: xᵀPx %v, want %v", trial, got, xpx)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestProjectIsTheBoundedMinimiser: the projection of θ onto the box is
// inside it and satisfies the Karush–Kuhn–Tucker conditions of
// min ‖G·(θ' − θ)‖²: the gradient Gᵀ·G·(θ' − θ) vanishes in each free
// coefficient, points into the box at a lower bound and out of it at an
// upper one — for square-root informations with condition numbers up to
// 10¹², the calibrator's, and θ anywhere from inside the box to 10⁶ out.
func TestProjectIsTheBoundedMinimiser(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 7))
	c := mustCalibrator(t, CalibratorConfig{})
	for trial := range 20000 {
		c.g = randomTriangular(rng, 6)
		for i := range 3 {
			c.theta[i] = c.hi[i] * (rng.Float64()*3 - 1) * math.Pow(10, 3*rng.Float64()*float64(rng.IntN(2)))
		}
		got := c.project()
		if !c.inBox(got) {
			t.Fatalf("trial %d: projection %v outside the box %v", trial, got, c.hi)
		}
		checkKKT(t, trial, &c.g, c.theta, got, c.hi)
	}
}

func checkKKT(t *testing.T, trial int, g *[3][3]float64, theta, got, hi [3]float64) {
	t.Helper()
	var r [3]float64 // G·(θ' − θ), and its scale for the tolerance
	var scale [3]float64
	for i := range 3 {
		for j := i; j < 3; j++ {
			r[i] += g[i][j] * (got[j] - theta[j])
			scale[i] += math.Abs(g[i][j]) * (math.Abs(got[j]) + math.Abs(theta[j]))
		}
	}
	for j := range 3 {
		grad, tol := 0.0, 0.0
		for i := 0; i <= j; i++ {
			grad += g[i][j] * r[i]
			tol += 1e-9 * math.Abs(g[i][j]) * scale[i]
		}
		switch {
		case got[j] == 0 && grad < -tol, got[j] == hi[j] && grad > tol, got[j] > 0 && got[j] < hi[j] && math.Abs(grad) > tol:
			t.Fatalf("trial %d: θ %v projected to %v: gradient %v in coefficient %d (tolerance %v), G %v", trial, theta, got, grad, j, tol, *g)
		}
	}
}
