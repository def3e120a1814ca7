// Package boundedio reads files and streams with a size limit, so that a
// file that is too large, or one that never ends (/dev/zero), is an error
// ("PATH is larger than 16 MiB") instead of exhausted memory. Every file a
// command or the controller reads whole goes through it.
package boundedio

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// SizeError is the error of an input beyond its size or line limit.
type SizeError struct{ msg string }

func (e *SizeError) Error() string { return e.msg }

// IsSizeError says whether err is (or wraps) a SizeError.
func IsSizeError(err error) bool {
	var se *SizeError
	return errors.As(err, &se)
}

// size is a limit in words: MiB when it is a whole number of them, else
// KiB, else bytes.
func size(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}

// Reader reads at most a limit of bytes of a named input and fails, with a
// SizeError, when there is more; it also fails on a line longer than its
// line limit (0: none).
type Reader struct {
	r           io.Reader
	name        string
	left, limit int64
	line, run   int
	maxLine     int
}

// NewReader bounds r, named name in errors, to limit bytes and lines to
// maxLine bytes (0: no line limit).
func NewReader(r io.Reader, name string, limit int64, maxLine int) *Reader {
	return &Reader{r: r, name: name, left: limit, limit: limit, line: 1, maxLine: maxLine}
}

// Read implements io.Reader.
func (l *Reader) Read(p []byte) (int, error) {
	if l.left <= 0 {
		var one [1]byte
		if n, err := l.r.Read(one[:]); n == 0 {
			return 0, err
		}
		return 0, &SizeError{fmt.Sprintf("%s is larger than %s", l.name, size(l.limit))}
	}
	if int64(len(p)) > l.left {
		p = p[:l.left]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.maxLine > 0 {
		for _, c := range p[:n] {
			if c == '\n' {
				l.line, l.run = l.line+1, 0
				continue
			}
			if l.run++; l.run > l.maxLine {
				return 0, &SizeError{fmt.Sprintf("%s:%d: the line is longer than %s", l.name, l.line, size(int64(l.maxLine)))}
			}
		}
	}
	return n, err
}

// ReadFile reads a whole file of at most limit bytes.
func ReadFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, path, limit)
}

// ReadAll reads r whole like ReadFile, naming it name in the error.
func ReadAll(r io.Reader, name string, limit int64) ([]byte, error) {
	return io.ReadAll(NewReader(r, name, limit, 0))
}
