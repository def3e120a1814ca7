package admission

import "math"

// Online calibration of the TTFT model (docs/admission.md): the
// coefficients θ = (β0, β1, Queue) of
//
//	TTFT = β0 + β1·miss + Queue·(ahead·step) + noise
//
// are linear in the regressors x = (1, miss, ahead·step), so recursive least
// squares fits them exactly, observation by observation: the fit θ
// minimises
//
//	prior + Σ_i λ^(age_i)·(y_i − θᵀx_i)² / R_i
//
// over the observations (x_i, y_i), the older ones forgotten geometrically
// (λ < 1) so that the fit follows a server whose speed changes (a new vLLM
// version, a changed batch mix), the prior (Initial ± PriorStd) forgotten
// with them — except that no coefficient's variance may exceed its
// prior's: where the data do not vary a regressor (nobody ever waits), its
// coefficient keeps its value and its prior uncertainty, the usual guard
// against covariance wind-up under forgetting (Ljung & Söderström, Theory
// and Practice of Recursive Identification, 1983). The coefficients
// reported are the minimiser within the bounds [0, Max]: θ projected onto
// them in the metric of P⁻¹, P being θ's covariance (calibrate_linalg.go).
//
// The filter is a square-root information filter (Bierman, Factorization
// Methods for Discrete Sequential Estimation, 1977): it keeps G, upper
// triangular with GᵀG = P⁻¹, and z = G·θ, and folds each observation in
// by Givens rotations. The regressors span fifteen orders of magnitude,
// and P⁻¹ a condition number of 10²⁰ and more: the Kalman form's update
// P ← P − K·xᵀP loses P's positive definiteness to rounding, forgetting
// then grows the negative eigenvalue by 1/λ per observation, until the
// standard errors are NaN and the fit runs to its bounds. G stays exact to
// rounding, and is what the projection needs.
//
// R_i is R, the residual variance — the running mean of the reported
// coefficients' squared residuals over the last min(1/(1−λ), 1000)
// observations — except for an outlier: an observation whose residual
// exceeds k·√s, s = xᵀPx + R being the prediction's variance, is clipped
// rather than rejected (Huber's M-estimator; Huber & Ronchetti, Robust
// Statistics, 2nd ed., 2009). It counts with the weight k·√s/|residual|,
// which bounds what one outlier can do — it moves the prediction by at
// most k·√(xᵀPx) — while a real step change, whose residuals stay large,
// still pulls the fit over as forgetting widens P and R grows.
//
// The project's Extended Kalman Filter (internal/kalman) would fit this
// model too, but it works on gonum matrices and allocates per update; the
// admission path needs a three-parameter linear update without allocation.

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
	// MaxObservedMiss and MaxObservedWait bound an observation's miss
	// tokens and wait ahead, seconds: 10⁶ times any server's, and a
	// regressor ratio of 10⁹ at most, which keeps every variance the
	// filter computes accurate to 10⁻⁷. Beyond 10¹⁵, rounding made β0's
	// standard error 10 % larger than its prior's, the cap it may not
	// exceed.
	MaxObservedMiss = 1e12
	MaxObservedWait = 1e9
	minNoiseVar     = 1e-12 // s²: a microsecond
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
// NaN, infinite or negative fields make it invalid, and so do more than
// MaxObservedMiss miss tokens or a wait ahead (Ahead × StepTime) of more
// than MaxObservedWait seconds.
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
	// them whose innovation was clipped, Ignored those that did not (an
	// invalid observation, or an update that would not stay finite).
	Used, Clipped, Ignored int64
}

// Calibrator learns Coefficients online. It is not safe for concurrent use.
type Calibrator struct {
	// g is the upper-triangular square root of θ's information P⁻¹, and
	// z = g·θ; theta is θ, the unconstrained fit, and coef its projection
	// onto the box [0, hi]: the coefficients reported.
	g               [3][3]float64
	z               [3]float64
	theta, coef, hi [3]float64
	p0              [3]float64 // prior variances: the cap on diag P
	r               float64
	lambda, sqrtLam float64
	k, window       float64
	fit             Fit
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
	c.sqrtLam = math.Sqrt(c.lambda)
	c.r = math.Pow(or(cfg.NoiseStd, DefaultNoiseStd), 2)
	c.window = maxNoiseWindow
	if c.lambda < 1 {
		c.window = math.Min(1/(1-c.lambda), maxNoiseWindow)
	}
	for i := range 3 {
		c.theta[i], c.hi[i] = scaled(i, init.at(i)), scaled(i, hi.at(i))
		c.coef[i] = c.theta[i]
		c.p0[i] = math.Max(math.Pow(scaled(i, std.at(i)), 2), minNoiseVar)
		c.g[i][i] = 1 / math.Sqrt(c.p0[i])
		c.z[i] = c.g[i][i] * c.theta[i]
	}
	return c, nil
}

// Observe updates the fit with o and reports whether it was used.
func (c *Calibrator) Observe(o Observation) bool {
	if !o.valid() {
		c.fit.Ignored++
		return false
	}
	x := [3]float64{1, float64(o.Miss) / beta1Scale, float64(o.Ahead) * o.StepTime}
	xpx := predictionVariance(&c.g, x)
	s := xpx + c.r
	// An observation is an outlier when neither θ nor the reported
	// coefficients explain it. θ alone can be far off where a bound holds
	// the coefficients back — a negative β1 fitting long prompts predicts
	// short ones below 0 — and the coefficients alone where the bounds
	// make the observations inconsistent with each other: judged by either
	// alone, a whole kind of request looked like outliers, was all but
	// ignored, and mispredicted by seconds for thousands of requests.
	res := math.Min(math.Abs(o.TTFT-dot(c.theta, x)), math.Abs(o.TTFT-dot(c.coef, x)))
	lim := c.k * math.Sqrt(s)
	r, clipped := c.r, res > lim
	if clipped {
		// Huber's weight lim/|res| on the observation, as the variance
		// R' = s·|res|/lim − xᵀPx: where the bounds do not bind, θ then
		// moves by exactly the step of the innovation clipped to ±lim, and
		// its information grows only as much as that step earned. Counting
		// the whole observation, as the Kalman form with a clipped
		// innovation does, made the filter sure of a prediction it had not
		// moved to: one clipped request with 3·10⁴ miss tokens left it
		// predicting 238 s for it, ±10⁻⁸ s, and deaf to every later one.
		r = s*res/lim - xpx
	}
	g, z := c.g, c.z
	w := 1 / math.Sqrt(r)
	rotateIn(&g, &z, [3]float64{x[0] * w, x[1] * w, x[2] * w}, o.TTFT*w, 0)
	theta := c.forget(&g, &z)
	// A TTFT near the largest float overflows R' or the rotations.
	if !finite(s) || !finite(r) || !allFinite(&g, z, theta) {
		c.fit.Ignored++
		return false
	}
	c.g, c.z, c.theta = g, z, theta
	c.coef = c.project()
	c.fit.Used++
	if clipped {
		c.fit.Clipped++
	}
	c.learnNoise(o.TTFT - dot(c.coef, x))
	return true
}

// forget discounts the information (g, z) by λ, then caps each
// coefficient's variance at its prior's, and returns the fit θ. The cap
// adds the information that brings the variance back down, as an
// observation of the coefficient at its reported value: a prior,
// renewed, centred where the fit is. It turns no information the data
// gave. (Scaling P's row and column down, as the Kalman form of the
// calibrator did, turns the information about x into information about a
// slightly different direction; with θ's terms cancelling by the
// thousand, as an unconstrained fit's do where a bound binds, that small
// turn moved the reported coefficients by seconds.) At the reported
// value, not θ's: where a bound binds, θ's is no estimate of anything, and
// anchoring there would hold the reported coefficients off the bounded
// least-squares fit.
func (c *Calibrator) forget(g *[3][3]float64, z *[3]float64) [3]float64 {
	for i := range 3 {
		for j := i; j < 3; j++ {
			g[i][j] *= c.sqrtLam
		}
		z[i] *= c.sqrtLam
	}
	v := variances(g)
	for i := range 3 {
		if v[i] > c.p0[i] {
			w := math.Sqrt(1/c.p0[i] - 1/v[i])
			var row [3]float64
			row[i] = w
			rotateIn(g, z, row, w*c.coef[i], i)
			v = variances(g)
		}
	}
	return solveUpper(g, *z)
}

// valid: NaN, ±Inf and negative fields, and misses and waits beyond
// any server's, are not observations.
func (o Observation) valid() bool {
	return finite(o.TTFT) && o.TTFT >= 0 && o.Miss >= 0 && o.Ahead >= 0 && finite(o.StepTime) && o.StepTime >= 0 &&
		float64(o.Miss) <= MaxObservedMiss && float64(o.Ahead)*o.StepTime <= MaxObservedWait
}

// learnNoise updates R, the running mean of the squared residuals of
// the updated coefficients, each clipped to ±k·√R: the scatter of the
// observations about the model the calibrator reports. Residuals, not
// innovations: while the fit is uncertain the innovation is mostly its
// own error, of variance xᵀPx, and counting that as noise made the
// calibrator deaf to its data — a configured β0 of 1 s, with all TTFTs 0,
// gave R ≈ 6·10⁵ s² after one observation, and β0 stayed at 1 s. Clipped
// at k·√R, not at k·√s: a fit far off, whose update was clipped, leaves a
// residual of about its error, and the error is not noise either — one
// prompt of 4·10⁷ tokens, predicted at 700 s by the default prior and
// clipped at 1σ, made R 2.5·10⁵ s² and the fit deaf for thousands of
// requests. R still grows by up to a factor of k² per window when the
// noise is larger than it thought, or the server changed.
func (c *Calibrator) learnNoise(res float64) {
	lim := c.k * math.Sqrt(c.r)
	res = math.Max(-lim, math.Min(res, lim))
	rho := 1 - 1/math.Min(float64(c.fit.Used+1), c.window)
	if r := rho*c.r + (1-rho)*res*res; finite(r) {
		c.r = math.Max(r, minNoiseVar)
	}
}

// Coefficients is the current fit.
func (c *Calibrator) Coefficients() Coefficients {
	return Coefficients{Beta0: c.coef[0], Beta1: c.coef[1] / beta1Scale, Queue: c.coef[2]}
}

// Fit is the current fit with its uncertainty and counts.
func (c *Calibrator) Fit() Fit {
	f := c.fit
	f.Coefficients = c.Coefficients()
	p := covariance(&c.g)
	f.StdErr = Coefficients{Beta0: math.Sqrt(p[0][0]), Beta1: math.Sqrt(p[1][1]) / beta1Scale, Queue: math.Sqrt(p[2][2])}
	f.ResidualStd = math.Sqrt(c.r)
	return f
}

// Covariance is the coefficients' covariance, in the units of Coefficients
// (β0, β1, Queue order).
func (c *Calibrator) Covariance() [3][3]float64 {
	cov := covariance(&c.g)
	for i := range 3 {
		for j := range 3 {
			cov[i][j] /= unit(i) * unit(j)
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
