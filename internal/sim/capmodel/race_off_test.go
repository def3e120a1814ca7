//go:build !race

package capmodel_test

// raceBuild: the tests run without the race detector.
const raceBuild = false
