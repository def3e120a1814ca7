//go:build !race

package sim

// raceBuild: the tests run without the race detector.
const raceBuild = false
