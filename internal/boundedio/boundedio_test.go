package boundedio

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLimitsExact: limit bytes are read, one more fails with a SizeError
// naming the input and the limit in words.
func TestLimitsExact(t *testing.T) {
	for _, n := range []int{99, 100, 101} {
		_, err := io.ReadAll(NewReader(strings.NewReader(strings.Repeat("1\n", n/2)+strings.Repeat("x", n%2)), "f", 100, 0))
		if (err != nil) != (n > 100) || (err != nil && (!IsSizeError(err) || err.Error() != "f is larger than 100 bytes")) {
			t.Errorf("%d bytes: %v", n, err)
		}
	}
	_, err := io.ReadAll(NewReader(strings.NewReader("ab\nabcd\nabc"), "f", 100, 3))
	if err == nil || err.Error() != "f:2: the line is longer than 3 bytes" {
		t.Errorf("line limit: %v", err)
	}
	for limit, want := range map[int64]string{64 << 10: "64 KiB", 16 << 20: "16 MiB", 1500: "1500 bytes"} {
		if got := size(limit); got != want {
			t.Errorf("size(%d) = %q, want %q", limit, got, want)
		}
	}
}

// TestReadFile: a file within the limit is read whole; a file that never
// ends is an error at the limit; a missing file is the open error.
func TestReadFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := ReadFile(p, 5); err != nil || string(data) != "hello" {
		t.Errorf("%q %v", data, err)
	}
	if _, err := ReadFile(p, 4); !IsSizeError(err) {
		t.Errorf("5 bytes at a 4-byte limit: %v", err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if _, err := ReadFile("/dev/zero", 1<<20); err == nil || err.Error() != "/dev/zero is larger than 1 MiB" {
			t.Errorf("/dev/zero: %v", err)
		}
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing"), 10); err == nil || IsSizeError(err) {
		t.Errorf("missing file: %v", err)
	}
}
