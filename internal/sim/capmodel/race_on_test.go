//go:build race

package capmodel_test

// raceBuild: the tests run under the race detector, which slows the
// single-threaded simulation about tenfold; the validation's sample
// shrinks to one case (the races it could find are between its workers,
// not in the numbers).
const raceBuild = true
