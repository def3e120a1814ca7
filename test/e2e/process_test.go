//go:build e2e

package e2e

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Process is a component the harness started: its own process group, its
// output in <artifacts>/<name>.log.
type Process struct {
	Name string
	Log  string
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// stopGrace is how long a component has to exit after SIGTERM before its
// process group is killed.
const stopGrace = 10 * time.Second

// StartProcess runs bin with args (and env added to the test's
// environment) in a process group of its own, its output appended to
// <artifacts>/<name>.log, and stops it when the test ends. The kernel
// kills it too if the test binary dies first (Pdeathsig), so a timed-out
// `go test` leaves no component behind.
func (h *Harness) StartProcess(name, bin string, env []string, args ...string) *Process {
	h.t.Helper()
	log := filepath.Join(h.Artifacts, name+".log")
	f, err := os.OpenFile(log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		h.t.Fatal(err)
	}
	fmt.Fprintf(f, "# %s %s %q\n", time.Now().Format(time.RFC3339), bin, args)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		h.t.Fatalf("starting %s: %v", name, err)
	}
	p := &Process{Name: name, Log: log, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	h.mu.Lock()
	h.procs = append(h.procs, p)
	h.mu.Unlock()
	h.t.Cleanup(func() {
		h.beforeStop() // while the components still answer
		p.Stop(h.t)
	})
	return p
}

// Exited says whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after stopGrace.
// Stopping a stopped process does nothing.
func (p *Process) Stop(t testing.TB) {
	p.signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGrace):
		t.Logf("%s did not exit %s after SIGTERM: killing its process group", p.Name, stopGrace)
		p.signal(syscall.SIGKILL)
		<-p.done
	}
}

// Kill ends the process group at once (a crash, not a shutdown).
// Killing a stopped process does nothing.
func (p *Process) Kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

func (p *Process) signal(sig syscall.Signal) {
	if exited, _ := p.Exited(); exited {
		return
	}
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		_ = p.cmd.Process.Signal(sig)
	}
}
