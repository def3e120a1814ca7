package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// maxInputBytes bounds a file a command reads whole: a snapshot (plan), a
// case file (model) or an observations CSV (tune); a larger one, or one
// that never ends (/dev/zero), is an error instead of exhausted memory.
const maxInputBytes = 16 << 20

// readInput reads path whole, or stdin when path is "-" and stdin is not
// nil, up to maxInputBytes.
func readInput(path string, stdin io.Reader) ([]byte, error) {
	r := stdin
	name := "standard input"
	if path != "-" || stdin == nil {
		f, err := os.Open(path)
		if err != nil {
			return nil, err
		}
		defer f.Close()
		r, name = f, path
	}
	data, err := io.ReadAll(io.LimitReader(r, maxInputBytes+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxInputBytes {
		return nil, fmt.Errorf("%s is larger than %d MiB", name, maxInputBytes>>20)
	}
	return data, nil
}

// createFile creates path and fills it with fn; the file is closed on every
// path and a close error is reported.
func createFile(path string, fn func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// checkWritable creates dir when missing and checks that a file can be
// created in it, so that a command whose results cannot be written fails
// before its work rather than after.
func checkWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".wva-write-check-*")
	if err != nil {
		return err
	}
	name := f.Name()
	if err := f.Close(); err != nil {
		return err
	}
	return os.Remove(name)
}

// safeFileName turns a name from an input (a model's) into a file name
// that stays in its folder: letters, digits, '.', '_' and '-' are kept,
// anything else (a '/', a '\', a space, a control character) becomes
// '_', and a leading '.' is prefixed with '_' (no "..", no hidden file).
func safeFileName(name string) string {
	var b strings.Builder
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := b.String()
	if s == "" || s[0] == '.' {
		s = "_" + s
	}
	return s
}
