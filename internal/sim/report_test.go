package sim

import "testing"

// TestSafeFileName: autoscaler names give the series and plot names they
// always had (static:N → static-N); names from inputs stay in their
// folder.
func TestSafeFileName(t *testing.T) {
	for _, tc := range []struct {
		name string
		sub  rune
		want string
	}{
		{"wva", '-', "wva"}, {"clairvoyant", '-', "clairvoyant"}, {"static:2", '-', "static-2"}, {"static:+02", '-', "static--02"},
		{"a/b", '_', "a_b"}, {"../etc", '_', "_.._etc"}, {".hidden", '_', "_.hidden"}, {"", '_', "_"},
		{"Llama 3.1:8b", '_', "Llama_3.1_8b"}, {"é\\\n", '_', "___"},
	} {
		if got := SafeFileName(tc.name, tc.sub); got != tc.want {
			t.Errorf("SafeFileName(%q, %q) = %q, want %q", tc.name, tc.sub, got, tc.want)
		}
	}
}
