package admission

import "math"

// Online calibration of the TTFT model (docs/admission.md): the
// coefficients θ = (β0, β1, Queue) of
//
//	TTFT = β0 + β1·miss + Queue·(ahead·step) + noise
//
// are linear in the regressors x = (1, miss, ahead·step), so recursive least
// squares fits them exactly, observation by observation. The filter is RLS
// in its Kalman form, with exponential forgetting (Haykin, Adaptive Filter
// Theory, 5th ed., 2014, the RLS chapter and its correspondence with the
// Kalman filter; Ljung & Söderström, Theory and Practice of Recursive
// Identification, 1983):
//
//	s = xᵀPx + R              the prediction's variance
//	e = y − θᵀx               the innovation, clipped to ±k·√s
//	K = Px / s
//	θ ← θ + K·e               then projected onto [0, Max] along P
//	P ← (P − K xᵀP) / λ       then each variance capped at its prior
//
// P is θ's covariance (its square-rooted diagonal is the standard errors),
// R the residual variance, estimated as the running mean of the clipped
// e² over the last min(1/(1−λ), 1000) observations. λ < 1 forgets old data
// geometrically, so the fit follows a server whose speed changes (a new
// vLLM version, a changed batch mix). Clipping rather than rejecting the
// large innovations (Huber's M-estimator; Huber & Ronchetti, Robust
// Statistics, 2nd ed., 2009) bounds what one outlier can do — it moves the
// prediction by at most k·√(xᵀPx) — while a real step change, whose
// residuals stay large, still pulls the fit over, faster as R grows. The
// cap on P is the usual guard against covariance wind-up under forgetting
// when a regressor does not vary (Ljung & Söderström): an unexcited
// coefficient keeps its prior uncertainty and its value.
//
// The project's Extended Kalman Filter (internal/kalman) would fit this
// model too, but it works on gonum matrices and allocates per update; the
// admission path needs a three-parameter linear update without allocation,
// which is fifteen lines of arithmetic.

const (
	// beta1Scale: θ holds β1 per thousand tokens, so that the three
	// coefficients have like magnitudes (ms-scale seconds) and P is well
	// conditioned.
	beta1Scale = 1000
	// Calibrator defaults.
	DefaultForgetting = 0.999
	DefaultNoiseStd   = 5e-3 // seconds
	DefaultClipSigma  = 3.0
	maxNoiseWindow    = 1000
	minNoiseVar       = 1e-12 // s²: a microsecond
)

// DefaultMaxCoefficients bound the fit: 10 s of fixed prefill cost, 10 ms
// per token, 100 steps per request ahead — far beyond any real server, so
// they only stop a runaway fit.
var DefaultMaxCoefficients = Coefficients{Beta0: 10, Beta1: 0.01, Queue: 100}

// CalibratorConfig configures a Calibrator. A zero field means its default.
type CalibratorConfig struct {
	// Initial is where the fit starts (zero fields: DefaultCoefficients).
	Initial Coefficients
	// PriorStd is the standard deviation of the initial guess per
	// coefficient (zero fields: the initial value itself, a 100 % prior).
	PriorStd Coefficients
	// Forgetting is λ, in [0.9, 1] (1: never forget); 0 means
	// DefaultForgetting, an effective memory of 1 000 observations.
	Forgetting float64
	// NoiseStd is the initial guess of the residual's standard deviation, in
	// seconds; 0 means DefaultNoiseStd.
	NoiseStd float64
	// ClipSigma is k, in [1, 10]: innovations beyond k standard deviations
	// of the prediction are clipped to it. 0 means DefaultClipSigma.
	ClipSigma float64
	// Max bounds the coefficients from above (zero fields:
	// DefaultMaxCoefficients); below, they are bounded by 0.
	Max Coefficients
}

// Validate reports every problem of the configuration, joined.
func (c CalibratorConfig) Validate() error {
	var v validator
	v.coefficients("calibrator.initial", c.Initial)
	v.coefficients("calibrator.priorStd", c.PriorStd)
	v.coefficients("calibrator.max", c.Max)
	v.within("calibrator.forgetting", c.Forgetting, 0.9, 1, DefaultForgetting)
	v.nonNeg("calibrator.noiseStd", c.NoiseStd, DefaultNoiseStd)
	v.within("calibrator.clipSigma", c.ClipSigma, 1, 10, DefaultClipSigma)
	if len(v.errs) == 0 {
		init, hi := c.Initial.withDefaults(), c.Max.or(DefaultMaxCoefficients)
		for i, name := range [3]string{"beta0", "beta1", "queue"} {
			if init.at(i) > hi.at(i) {
				v.add("calibrator.initial."+name, "must be ≤ calibrator.max.%s %v, got %v", name, hi.at(i), init.at(i))
			}
		}
	}
	return v.err()
}

// Observation is one request's outcome, as the calibrator learns from it.
type Observation struct {
	TTFT     float64 // seconds, as measured at the gateway or the server
	Miss     int     // prompt tokens not found in the prefix cache
	Ahead    int     // requests of the same or a higher priority waiting ahead of it on arrival
	StepTime float64 // the instance's step time on arrival, seconds
}

// Fit is the calibrator's current state.
type Fit struct {
	Coefficients Coefficients
	// StdErr is each coefficient's standard error, √diag P.
	StdErr Coefficients
	// ResidualStd is √R, the residual's standard deviation, seconds.
	ResidualStd float64
	// Used counts the observations that updated the fit, Clipped those of
	// them whose innovation was clipped, Ignored those that did not (NaN,
	// ±Inf or negative fields, or an update that would not stay finite).
	Used, Clipped, Ignored int64
}

// Calibrator learns Coefficients online. It is not safe for concurrent use.
type Calibrator struct {
	theta, hi [3]float64
	p         [3][3]float64
	p0        [3]float64 // prior variances: the cap on diag P
	r         float64
	lambda, k float64
	window    float64
	fit       Fit
}

// NewCalibrator returns a calibrator at cfg.Initial with the prior
// covariance diag(PriorStd²).
func NewCalibrator(cfg CalibratorConfig) (*Calibrator, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	init := cfg.Initial.withDefaults()
	std, hi := cfg.PriorStd.or(init), cfg.Max.or(DefaultMaxCoefficients)
	c := &Calibrator{lambda: or(cfg.Forgetting, DefaultForgetting), k: or(cfg.ClipSigma, DefaultClipSigma)}
	c.r = math.Pow(or(cfg.NoiseStd, DefaultNoiseStd), 2)
	c.window = maxNoiseWindow
	if c.lambda < 1 {
		c.window = math.Min(1/(1-c.lambda), maxNoiseWindow)
	}
	for i := range 3 {
		c.theta[i], c.hi[i] = scaled(i, init.at(i)), scaled(i, hi.at(i))
		c.p0[i] = math.Max(math.Pow(scaled(i, std.at(i)), 2), minNoiseVar)
		c.p[i][i] = c.p0[i]
	}
	return c, nil
}

// Observe updates the fit with o and reports whether it was used.
func (c *Calibrator) Observe(o Observation) bool {
	if !finite(o.TTFT) || o.TTFT < 0 || o.Miss < 0 || o.Ahead < 0 || !finite(o.StepTime) || o.StepTime < 0 {
		c.fit.Ignored++
		return false
	}
	x := [3]float64{1, float64(o.Miss) / beta1Scale, float64(o.Ahead) * o.StepTime}
	var px [3]float64
	xpx := 0.0
	for i := range 3 {
		for j := range 3 {
			px[i] += c.p[i][j] * x[j]
		}
		xpx += x[i] * px[i]
	}
	s := xpx + c.r
	e := o.TTFT - dot(c.theta, x)
	if lim := c.k * math.Sqrt(s); math.Abs(e) > lim {
		e = math.Copysign(lim, e)
		c.fit.Clipped++
	}
	theta, p := c.theta, c.p
	for i := range 3 {
		theta[i] += px[i] / s * e
		for j := range 3 {
			p[i][j] = (p[i][j] - px[i]*px[j]/s) / c.lambda
		}
	}
	symmetrise(&p)
	capVariances(&p, c.p0)
	c.project(&theta, &p)
	if !allFinite(theta, p) {
		c.fit.Ignored++
		return false
	}
	c.theta, c.p = theta, p
	c.fit.Used++
	rho := 1 - 1/math.Min(float64(c.fit.Used+1), c.window)
	if r := rho*c.r + (1-rho)*e*e; finite(r) {
		c.r = math.Max(r, minNoiseVar)
	}
	return true
}

// project moves theta onto the box [0, hi] along P: for the coefficient
// furthest outside, θ ← θ − P[:,i]/P[i][i]·(θ_i − bound), the closest point
// on the bound in the metric of P⁻¹ (Simon, Kalman filtering with state
// constraints: a survey, IET Control Theory & Applications 4(8), 2010),
// so that the coefficients correlated with it take up what it
// cannot (β0 absorbs a slope β1 may not take below 0). P is left as it is,
// so a coefficient can leave its bound when the data say so. A final clamp
// guards against rounding.
func (c *Calibrator) project(theta *[3]float64, p *[3][3]float64) {
	for range 3 {
		worst, bound, over := -1, 0.0, 0.0
		for i := range 3 {
			b := math.Min(math.Max(theta[i], 0), c.hi[i])
			if d := math.Abs(theta[i] - b); d > over && p[i][i] > 0 {
				worst, bound, over = i, b, d
			}
		}
		if worst < 0 {
			break
		}
		v := theta[worst] - bound
		for j := range 3 {
			theta[j] -= p[j][worst] / p[worst][worst] * v
		}
		theta[worst] = bound
	}
	for i := range 3 {
		theta[i] = math.Min(math.Max(theta[i], 0), c.hi[i])
	}
}

// Coefficients is the current fit.
func (c *Calibrator) Coefficients() Coefficients {
	return Coefficients{Beta0: c.theta[0], Beta1: c.theta[1] / beta1Scale, Queue: c.theta[2]}
}

// Fit is the current fit with its uncertainty and counts.
func (c *Calibrator) Fit() Fit {
	f := c.fit
	f.Coefficients = c.Coefficients()
	f.StdErr = Coefficients{Beta0: math.Sqrt(c.p[0][0]), Beta1: math.Sqrt(c.p[1][1]) / beta1Scale, Queue: math.Sqrt(c.p[2][2])}
	f.ResidualStd = math.Sqrt(c.r)
	return f
}

// Covariance is the coefficients' covariance, in the units of Coefficients
// (β0, β1, Queue order).
func (c *Calibrator) Covariance() [3][3]float64 {
	var cov [3][3]float64
	for i := range 3 {
		for j := range 3 {
			cov[i][j] = c.p[i][j] / (unit(i) * unit(j))
		}
	}
	return cov
}

// at is the i-th coefficient in (β0, β1, Queue) order.
func (c Coefficients) at(i int) float64 {
	switch i {
	case 0:
		return c.Beta0
	case 1:
		return c.Beta1
	}
	return c.Queue
}

// or replaces c's zero fields with def's.
func (c Coefficients) or(def Coefficients) Coefficients {
	return Coefficients{Beta0: or(c.Beta0, def.Beta0), Beta1: or(c.Beta1, def.Beta1), Queue: or(c.Queue, def.Queue)}
}

// unit is the factor from coefficient i to its internal scale.
func unit(i int) float64 {
	if i == 1 {
		return beta1Scale
	}
	return 1
}

func scaled(i int, v float64) float64 { return v * unit(i) }

func dot(a, b [3]float64) float64 { return a[0]*b[0] + a[1]*b[1] + a[2]*b[2] }

func symmetrise(p *[3][3]float64) {
	for i := range 3 {
		for j := i + 1; j < 3; j++ {
			m := (p[i][j] + p[j][i]) / 2
			p[i][j], p[j][i] = m, m
		}
	}
}

// capVariances scales row and column i of p by √(cap_i/p_ii) where p_ii
// exceeds cap_i: a congruence D·P·D with D diagonal and positive, so P
// stays symmetric positive semi-definite.
func capVariances(p *[3][3]float64, caps [3]float64) {
	var d [3]float64
	for i := range 3 {
		d[i] = 1
		if p[i][i] > caps[i] {
			d[i] = math.Sqrt(caps[i] / p[i][i])
		}
	}
	for i := range 3 {
		for j := range 3 {
			p[i][j] *= d[i] * d[j]
		}
	}
}

func allFinite(theta [3]float64, p [3][3]float64) bool {
	for i := range 3 {
		if !finite(theta[i]) {
			return false
		}
		for j := range 3 {
			if !finite(p[i][j]) {
				return false
			}
		}
	}
	return true
}
