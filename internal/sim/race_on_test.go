//go:build race

package sim

// raceBuild: the tests run under the race detector, which slows the
// single-threaded simulation about tenfold; the broad tests shorten their
// runs (the races they look for are between runs, not within one).
const raceBuild = true
