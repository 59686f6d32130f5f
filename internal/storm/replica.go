package storm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Replica is one `razao serve -migrate=false` process on a fixed loopback
// port; it can be killed and started again on the same port.
type Replica struct {
	Index   int
	Addr    string
	bin     string
	env     []string
	logPath string

	mu     sync.Mutex
	cmd    *exec.Cmd
	done   chan struct{} // closed when the current process has exited
	state  *os.ProcessState
	starts int
}

// URL is the replica's base URL.
func (r *Replica) URL() string { return "http://" + r.Addr }

// Start starts the process; its stdout and stderr are appended to the
// replica's log file.
func (r *Replica) Start() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd != nil && !closed(r.done) {
		return fmt.Errorf("replica %d is already running (pid %d)", r.Index, r.cmd.Process.Pid)
	}
	log, err := os.OpenFile(r.logPath, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "---- storm: start #%d at %s\n", r.starts+1, time.Now().Format(time.RFC3339Nano))
	// Several replicas on one machine: each its own admin port.
	cmd := exec.Command(r.bin, "serve", "-migrate=false", "-admin-listen", "127.0.0.1:0")
	cmd.Env = r.env
	cmd.Stdout, cmd.Stderr = log, log
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		log.Close()
		return fmt.Errorf("start replica %d: %w", r.Index, err)
	}
	done := make(chan struct{})
	r.cmd, r.done, r.state = cmd, done, nil
	r.starts++
	go func() {
		cmd.Wait()
		log.Close()
		r.mu.Lock()
		r.state = cmd.ProcessState
		r.mu.Unlock()
		close(done)
	}()
	return nil
}

func closed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// PID is the current process's id (0 before the first start).
func (r *Replica) PID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil {
		return 0
	}
	return r.cmd.Process.Pid
}

// Running reports whether the current process has not exited.
func (r *Replica) Running() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.cmd != nil && !closed(r.done)
}

// Starts is how many times the replica was started.
func (r *Replica) Starts() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.starts
}

// Signal sends sig to the current process.
func (r *Replica) Signal(sig os.Signal) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cmd == nil || closed(r.done) {
		return fmt.Errorf("replica %d is not running", r.Index)
	}
	return r.cmd.Process.Signal(sig)
}

// Kill sends SIGKILL to the current process, if it runs, and waits for it
// to be reaped.
func (r *Replica) Kill() {
	r.mu.Lock()
	cmd, done := r.cmd, r.done
	r.mu.Unlock()
	if cmd == nil {
		return
	}
	if !closed(done) {
		cmd.Process.Signal(syscall.SIGKILL)
	}
	<-done
}

// Wait waits until the current process exits or ctx ends, and returns its
// state.
func (r *Replica) Wait(ctx context.Context) (*os.ProcessState, error) {
	r.mu.Lock()
	done := r.done
	r.mu.Unlock()
	if done == nil {
		return nil, fmt.Errorf("replica %d was never started", r.Index)
	}
	select {
	case <-done:
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.state, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// WaitReady polls /readyz until it answers 200, the process exits or ctx
// ends.
func (r *Replica) WaitReady(ctx context.Context) error {
	client := &http.Client{Timeout: 3 * time.Second}
	for {
		r.mu.Lock()
		done := r.done
		r.mu.Unlock()
		if closed(done) {
			return errors.New("process exited before it was ready")
		}
		code, _ := Probe(ctx, client, r.URL()+"/readyz")
		if code == http.StatusOK {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready: %w", ctx.Err())
		case <-done:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Probe GETs url and returns the status code (0 on a transport error).
func Probe(ctx context.Context, client *http.Client, url string) (int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode, nil
}

// LogTail returns the last n lines of the replica's log.
func (r *Replica) LogTail(n int) string {
	b, err := os.ReadFile(r.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// LogContains reports whether the replica's log holds s.
func (r *Replica) LogContains(s string) bool {
	b, err := os.ReadFile(r.logPath)
	return err == nil && bytes.Contains(b, []byte(s))
}

// LogCount counts the lines of the replica's log that hold s.
func (r *Replica) LogCount(s string) int {
	b, err := os.ReadFile(r.logPath)
	if err != nil {
		return 0
	}
	return bytes.Count(b, []byte(s))
}
