package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The sse scenario's readers run in a process of their own (this binary
// run as `load sse-readers`), as the apps they stand for run on machines
// of their own. In the process that sends the webhooks, a thousand reader
// goroutines woken together queued its eight senders behind them in Go's
// run queue: the webhooks' latency measured the load tool's scheduler as
// much as razao. Between processes the kernel's scheduler arbitrates, as
// it does between razao and its clients anywhere else.

// readersCommand is the argument that runs this binary as the readers.
const readersCommand = "sse-readers"

// readersConfig is what the readers process reads from its stdin: where
// to read, from which cursor, and each stream's token.
type readersConfig struct {
	URL    string   `json:"url"`
	Head   string   `json:"head"`
	Tokens []string `json:"tokens"`
}

// readersOpened is the first line the readers process writes: how many
// streams opened, and why the others did not.
type readersOpened struct {
	Open     int64          `json:"open"`
	Refused  int64          `json:"refused"`
	Refusals map[string]int `json:"refusals"`
}

// runReaders is the readers process: it opens one stream per token,
// writes a readersOpened line once every stream is open or refused, then
// every 50 ms the fewest and the most events a stream has received
// ("lo hi"), until its stdin ends.
func runReaders(ctx context.Context, stdin io.Reader, stdout io.Writer) int {
	in := bufio.NewReader(stdin)
	var cfg readersConfig
	if err := json.NewDecoder(io.LimitReader(in, 1<<20)).Decode(&cfg); err != nil {
		fmt.Fprintln(os.Stderr, "sse-readers: config:", err)
		return exitUsage
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		// The parent closes our stdin to stop us.
		io.Copy(io.Discard, stdin)
		cancel()
	}()
	k := len(cfg.Tokens)
	t := newTransport(k)
	defer t.CloseIdleConnections()
	client := &http.Client{Transport: t, CheckRedirect: newClient(t).CheckRedirect} // no timeout: streams stay open
	counts := make([]atomic.Int64, k)
	opened := readersOpened{Refusals: map[string]int{}}
	var mu sync.Mutex
	var ready, wg sync.WaitGroup
	ready.Add(k)
	for i := range k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			once := sync.OnceFunc(ready.Done)
			defer once()
			resp, err := openStream(ctx, client, cfg.URL, cfg.Tokens[i], cfg.Head)
			if err != nil || resp.StatusCode != http.StatusOK {
				key := "error"
				if err == nil {
					key = strconv.Itoa(resp.StatusCode)
					resp.Body.Close()
				}
				mu.Lock()
				opened.Refused++
				opened.Refusals[key]++
				mu.Unlock()
				return
			}
			defer resp.Body.Close()
			mu.Lock()
			opened.Open++
			mu.Unlock()
			once()
			countEvents(resp.Body, &counts[i])
		}()
	}
	ready.Wait()
	mu.Lock()
	line, _ := json.Marshal(opened)
	mu.Unlock()
	fmt.Fprintf(stdout, "%s\n", line)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for ctx.Err() == nil {
		lo, hi := int64(-1), int64(0)
		for i := range counts {
			n := counts[i].Load()
			if lo < 0 || n < lo {
				lo = n
			}
			hi = max(hi, n)
		}
		if _, err := fmt.Fprintf(stdout, "%d %d\n", lo, hi); err != nil {
			break
		}
		select {
		case <-ctx.Done():
		case <-tick.C:
		}
	}
	cancel()
	wg.Wait()
	return exitOK
}

func openStream(ctx context.Context, client *http.Client, base, token, head string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/events", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if head != "" {
		req.Header.Set("Last-Event-ID", head)
	}
	return client.Do(req)
}

// readers is the parent's handle on a running readers process.
type readers struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lo, hi atomic.Int64
	opened readersOpened
	// done is closed when the process's output ends; nil until it is read.
	done chan struct{}
}

// startReaders runs the readers process for cfg and waits until its
// streams are open.
func startReaders(ctx context.Context, cfg readersConfig) (*readers, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("sse readers: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, readersCommand)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("sse readers: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("sse readers: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("sse readers: %w", err)
	}
	r := &readers{cmd: cmd, stdin: stdin}
	if err := json.NewEncoder(stdin).Encode(cfg); err != nil {
		r.stop()
		return nil, fmt.Errorf("sse readers: send config: %w", err)
	}
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		r.stop()
		return nil, fmt.Errorf("sse readers: ended before reporting its streams: %v", lines.Err())
	}
	if err := json.Unmarshal(lines.Bytes(), &r.opened); err != nil {
		r.stop()
		return nil, fmt.Errorf("sse readers: %q: %w", lines.Text(), err)
	}
	r.done = make(chan struct{})
	go func() {
		defer close(r.done)
		for lines.Scan() {
			lo, hi, ok := strings.Cut(lines.Text(), " ")
			l, err1 := strconv.ParseInt(lo, 10, 64)
			h, err2 := strconv.ParseInt(hi, 10, 64)
			if ok && err1 == nil && err2 == nil {
				r.lo.Store(l)
				r.hi.Store(h)
			}
		}
	}()
	return r, nil
}

func (r *readers) pid() int { return r.cmd.Process.Pid }

// stop ends the readers process and waits for it (after its output: Wait
// closes the pipe).
func (r *readers) stop() {
	r.stdin.Close()
	if r.done != nil {
		<-r.done
	}
	r.cmd.Wait()
}
