package admission

import (
	"errors"
	"fmt"
	"math"
)

// FieldError is a problem with one configuration field, named by its path
// as the configuration spells it (for example "predictive.headroom"), so
// that a caller can point at the flag or the YAML field.
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string { return "admission: " + e.Path + ": " + e.Msg }

// validator collects every problem of a configuration; err joins them.
type validator struct{ errs []error }

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (v *validator) err() error { return errors.Join(v.errs...) }

// nonNeg checks a field whose zero value means its default: finite and ≥ 0.
func (v *validator) nonNeg(path string, x, def float64) {
	if !finite(x) || x < 0 {
		v.add(path, "must be a finite number ≥ 0 (0 means the default %v), got %v", def, x)
	}
}

// within checks a field whose zero value means its default: 0 or in [lo, hi].
func (v *validator) within(path string, x, lo, hi, def float64) {
	if x != 0 && !(x >= lo && x <= hi) {
		v.add(path, "must be in [%v, %v] (0 means the default %v), got %v", lo, hi, def, x)
	}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// or returns x, or def when x is 0 (a settings field's zero value).
func or[T int | float64](x, def T) T {
	if x == 0 {
		return def
	}
	return x
}
