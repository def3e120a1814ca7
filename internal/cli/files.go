package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/spf13/cobra"

	"github.com/llm-d-incubation/wva/internal/boundedio"
)

// maxInputBytes bounds a file a command reads whole: a snapshot (plan), a
// case file (model) or an observations CSV (tune); a larger one, or one
// that never ends (/dev/zero), is an error instead of exhausted memory.
const maxInputBytes = 16 << 20

// readInput reads path whole, or stdin when path is "-" and stdin is not
// nil, up to maxInputBytes.
func readInput(path string, stdin io.Reader) ([]byte, error) {
	if path == "-" && stdin != nil {
		return boundedio.ReadAll(stdin, "standard input", maxInputBytes)
	}
	return boundedio.ReadFile(path, maxInputBytes)
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

// interruptible is the command's context, cancelled by the first Ctrl-C
// (the command then stops its work and writes what it has). From then on
// the default handling is back, so that a second Ctrl-C ends the process
// at once, even while the partial results are being written.
func interruptible(cmd *cobra.Command) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(cmd.Context())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt)
	stderr := cmd.ErrOrStderr()
	go func() {
		defer signal.Stop(sig)
		select {
		case <-sig:
			signal.Stop(sig) // the default again: a second Ctrl-C ends the process
			fmt.Fprintln(stderr, "\ninterrupted: writing what was done so far (Ctrl-C again to quit at once)")
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}
