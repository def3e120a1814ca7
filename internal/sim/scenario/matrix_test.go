package scenario

import "testing"

// TestMatrixRunCountNoWrap: the matrix's run count is the product of four
// lengths a file chooses; 2^16 of each is 2^64 runs, which an int product
// wrapped to 0 and so passed the limit (the run then allocated its jobs
// until memory ran out).
func TestMatrixRunCountNoWrap(t *testing.T) {
	if n := runCount(1<<16, 1<<16, 1<<16, 1<<16); n != 1<<64 || n <= MaxMatrixRuns {
		t.Errorf("runCount = %v, want 2^64", n)
	}
	if n := runCount(3, 2, 5, 3); n != 90 {
		t.Errorf("runCount = %v, want 90", n)
	}
}
