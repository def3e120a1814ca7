// Package strictyaml decodes YAML or JSON input that must hold only known
// fields, with errors that never echo the input's content: an unknown key
// is named only when it looks like a field name, so that a file given by
// mistake (a password file, a key) is not printed line by line.
package strictyaml

import (
	"errors"
	"regexp"

	"sigs.k8s.io/yaml"
)

// Unmarshal is yaml.UnmarshalStrict with its error redacted (Redact).
func Unmarshal(data []byte, out any) error {
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		return Redact(err)
	}
	return nil
}

var (
	unknownField = regexp.MustCompile(`unknown field "((?:[^"\\]|\\.)*)"`)
	plausibleKey = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]{0,63}$`)
)

// Redact replaces, in a decoder's error, every unknown field that does not
// look like a field name (letters, digits, _ . -, at most 64) by a note
// that says so; the error is otherwise unchanged.
func Redact(err error) error {
	msg := err.Error()
	out := unknownField.ReplaceAllStringFunc(msg, func(m string) string {
		if k := unknownField.FindStringSubmatch(m)[1]; plausibleKey.MatchString(k) {
			return m
		}
		return "unknown field (a key that is no field name; not shown: is this the right file?)"
	})
	if out == msg {
		return err
	}
	return errors.New(out)
}
