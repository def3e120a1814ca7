// Package strictyaml decodes YAML or JSON input that must hold only known
// fields, with errors that never echo the input's content: an unknown key
// is named only when it looks like a field name, so that a file given by
// mistake (a password file, a key) is not printed line by line.
package strictyaml

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"

	yamlv3 "go.yaml.in/yaml/v3"
	"sigs.k8s.io/yaml"
)

// Unmarshal is yaml.UnmarshalStrict with its error redacted (Redact). The
// input must hold one document: a second YAML document, or a value after
// a JSON one, is an error (the decoder would read the first and drop the
// rest in silence).
func Unmarshal(data []byte, out any) error {
	if err := single(data); err != nil {
		return err
	}
	if err := yaml.UnmarshalStrict(data, out); err != nil {
		return Redact(err)
	}
	return nil
}

// single checks that data holds at most one YAML document.
func single(data []byte) error {
	dec := yamlv3.NewDecoder(bytes.NewReader(data))
	for n := 0; ; n++ {
		var doc yamlv3.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return Redact(err)
		}
		if n == 1 {
			return fmt.Errorf("a second document at line %d: the input must hold one", doc.Line)
		}
		if err := numbersInRange(&doc); err != nil {
			return err
		}
	}
}

// numbersInRange refuses a plain scalar that is a number too large for a
// float64 (1e309): YAML resolves it to a string, and the decoder would
// then report "cannot unmarshal string" for a field that wants a number.
func numbersInRange(n *yamlv3.Node) error {
	if n.Kind == yamlv3.ScalarNode && n.Style == 0 && n.Tag == "!!str" {
		if _, err := strconv.ParseFloat(n.Value, 64); errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("line %d: a number beyond the range of a 64-bit float (±1.8e308)", n.Line)
		}
	}
	for _, c := range n.Content {
		if err := numbersInRange(c); err != nil {
			return err
		}
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
