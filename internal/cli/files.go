package cli

import (
	"io"
	"os"
)

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
