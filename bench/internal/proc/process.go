package proc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// Process is a child process started by Start.
type Process struct {
	Name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{} // closed when the process has exited
	err  error         // exit status; read after done is closed
}

// Start runs bin with args in dir, writing its stdout and stderr to logPath
// (truncated first). The process is not tied to a context: it runs until Stop.
func Start(name, dir, logPath, bin string, args ...string) (*Process, error) {
	lf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = lf, lf
	// Own process group: a Ctrl-C at the terminal reaches the bench, which
	// then stops its servers in order. Pdeathsig: if the bench itself dies,
	// the kernel kills its servers rather than leaving them running.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &Process{Name: name, cmd: cmd, log: lf, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended, and how.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		return true, p.err
	default:
		return false, nil
	}
}

// ErrKilled means a process did not stop within its grace period and was
// killed.
var ErrKilled = errors.New("proc: killed after grace period")

// Stop sends SIGTERM and waits for the process to exit, up to grace (or
// ctx); then it sends SIGKILL and returns ErrKilled.
func (p *Process) Stop(ctx context.Context, grace time.Duration) error {
	if ok, _ := p.Exited(); ok {
		return nil
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-p.done:
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return fmt.Errorf("%s: %w", p.Name, ErrKilled)
}
