package admission

import (
	"errors"
	"strings"
	"testing"
)

// instance builds an Instance snapshot: instance(step).cached(n).waiting(p, k)….
type instanceBuilder struct{ in Instance }

func instance(step float64) *instanceBuilder {
	return &instanceBuilder{in: Instance{StepTime: step}}
}

func (b *instanceBuilder) cached(n int) *instanceBuilder { b.in.Cached = n; return b }

func (b *instanceBuilder) kv(u float64) *instanceBuilder { b.in.KVUtil = u; return b }

func (b *instanceBuilder) waiting(priority, count int) *instanceBuilder {
	b.in.Waiting = append(b.in.Waiting, Waiting{Priority: priority, Count: count})
	return b
}

func (b *instanceBuilder) obj() Instance { return b.in }

func fleetOf(bs ...*instanceBuilder) []Instance {
	f := make([]Instance, len(bs))
	for i, b := range bs {
		f[i] = b.obj()
		f[i].ID = i
	}
	return f
}

func mustPredictive(t testing.TB, c PredictiveConfig) *Predictive {
	t.Helper()
	p, err := NewPredictive(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantFieldErrors checks that err names exactly the given paths.
func wantFieldErrors(t *testing.T, err error, paths ...string) {
	t.Helper()
	if len(paths) == 0 {
		if err != nil {
			t.Fatalf("unexpected error: %v", err)
		}
		return
	}
	if err == nil {
		t.Fatalf("no error, want errors at %v", paths)
	}
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v is not a *FieldError", err)
	}
	for _, p := range paths {
		if !strings.Contains(err.Error(), "admission: "+p+": ") {
			t.Errorf("error %q does not name %s", err, p)
		}
	}
	if n := strings.Count(err.Error(), "admission: "); n != len(paths) {
		t.Errorf("error %q has %d problems, want %d", err, n, len(paths))
	}
}
