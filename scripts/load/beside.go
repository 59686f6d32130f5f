package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/auth"
)

// floodBody is the size of each unauthenticated body of the flood: the
// Hodle endpoint's limit (256 KiB) less a little, so it is read whole.
const floodBody = 256<<10 - 64

// flood: the distinct payments while -flood-c goroutines post 256 KB
// bodies with a bad signature to the Hodle endpoint, as fast as razao
// answers them. Every flood request must be refused (401), and the
// payments must pass as in distinct.
func (l *loader) flood(ctx context.Context) *result {
	return l.payments(ctx, "flood", func(ctx context.Context, res *result) func() {
		pad := bytes.Repeat([]byte("x"), floodBody-len(`{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"","pad":""}}`)-16)
		t := newTransport(l.opt.floodC)
		client := newClient(t)
		fctx, cancel := context.WithCancel(ctx)
		var sent, bytesSent atomic.Int64
		var mu sync.Mutex
		codes := map[string]int{}
		var wg sync.WaitGroup
		for w := 0; w < l.opt.floodC; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; fctx.Err() == nil; i++ {
					body := fmt.Appendf(nil, `{"event":"DEPOSIT_ASSET_SUCCESS","data":{"trackId":"fl%d-%d","pad":"%s"}}`, w, i, pad)
					ts := strconv.FormatInt(time.Now().Unix(), 10)
					rp := l.do(fctx, client, http.MethodPost, "/webhooks/hodle", body, http.Header{
						"Content-Type":      {"application/json"},
						"X-Hodle-Timestamp": {ts},
						"X-Hodle-Signature": {strings.Repeat("0", 64)},
					})
					if fctx.Err() != nil {
						return
					}
					sent.Add(1)
					bytesSent.Add(int64(len(body)))
					key := "error"
					if rp.err == nil {
						key = strconv.Itoa(rp.code)
					}
					mu.Lock()
					codes[key]++
					mu.Unlock()
				}
			}()
		}
		start := time.Now()
		l.logf("flood: %d goroutines posting %d-byte bodies with a bad signature to /webhooks/hodle", l.opt.floodC, floodBody)
		return func() {
			cancel()
			wg.Wait()
			t.CloseIdleConnections()
			secs := time.Since(start).Seconds()
			res.Extra["flood_requests"] = sent.Load()
			res.Extra["flood_codes"] = mapString(codes)
			if secs > 0 {
				res.Extra["flood_requests_per_s"] = round1(float64(sent.Load()) / secs)
				res.Extra["flood_mb_per_s"] = round1(float64(bytesSent.Load()) / secs / 1e6)
			}
			for code, n := range codes {
				if code != "401" {
					res.violate("%d flood requests answered %s, want 401", n, code)
				}
			}
			if sent.Load() == 0 {
				res.violate("the flood sent nothing")
			}
		}
	})
}

// sse: the distinct payments while -streams Server-Sent Event streams are
// open on GET /v1/events, spread over read tokens of -streams-per-token
// streams each (razao's per-token limit). The streams start at the head
// of the outbox, as apps that are up to date do; each must receive every
// event of the payments (charge.paid and access.granted per payment).
// Needs -database-url (to create the tokens and find the head).
func (l *loader) sse(ctx context.Context) *result {
	if l.db == nil {
		res := newResult(l, "sse", l.opt.n, l.opt.c)
		res.violate("sse needs -database-url: it creates its read tokens in razao's database")
		return res
	}
	return l.payments(ctx, "sse", func(ctx context.Context, res *result) func() {
		k := l.opt.streams
		per := l.opt.streamsPerToken
		db := sqlx.NewDb(l.db, "postgres")
		tokens := make([]string, (k+per-1)/per)
		for i := range tokens {
			plain, _, err := auth.Create(ctx, db, fmt.Sprintf("%s-sse-%d", l.runID, i), []auth.Scope{auth.Read})
			if err != nil {
				res.violate("create read token: %v", err)
				return func() {}
			}
			tokens[i] = plain
		}
		var head string
		if err := l.db.QueryRowContext(ctx, `SELECT coalesce((SELECT xid::text || '-' || id FROM outbox ORDER BY xid DESC, id DESC LIMIT 1), '')`).Scan(&head); err != nil {
			res.violate("outbox head: %v", err)
			return func() {}
		}
		t := newTransport(k)
		client := &http.Client{Transport: t, CheckRedirect: newClient(t).CheckRedirect} // no timeout: streams stay open
		sctx, cancel := context.WithCancel(ctx)
		counts := make([]atomic.Int64, k)
		var received atomic.Int64 // bytes, all streams together
		var opened, refused atomic.Int64
		var mu sync.Mutex
		refusals := map[string]int{}
		var ready, wg sync.WaitGroup
		ready.Add(k)
		for i := 0; i < k; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				once := sync.OnceFunc(ready.Done)
				defer once()
				req, err := http.NewRequestWithContext(sctx, http.MethodGet, l.base.String()+"/v1/events", nil)
				if err != nil {
					return
				}
				req.Header.Set("Authorization", "Bearer "+tokens[i/per])
				if head != "" {
					req.Header.Set("Last-Event-ID", head)
				}
				resp, err := client.Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					refused.Add(1)
					key := "error"
					if err == nil {
						key = strconv.Itoa(resp.StatusCode)
						resp.Body.Close()
					}
					mu.Lock()
					refusals[key]++
					mu.Unlock()
					return
				}
				defer resp.Body.Close()
				opened.Add(1)
				once()
				countEvents(resp.Body, &counts[i], &received)
			}()
		}
		ready.Wait()
		l.logf("sse: %d streams open over %d tokens (%d refused)", opened.Load(), len(tokens), refused.Load())
		res.Extra["streams_open"] = opened.Load()
		res.Extra["stream_tokens"] = len(tokens)
		if refused.Load() > 0 {
			res.violate("%d of %d streams refused: %s", refused.Load(), k, mapString(refusals))
		}
		start := time.Now()
		return func() {
			// What one stream received a second, for the fanout scenario.
			if secs := time.Since(start).Seconds(); secs > 0 && opened.Load() > 0 {
				l.streamBytesPerS = float64(received.Load()) / float64(opened.Load()) / secs
				res.Extra["stream_kb_per_s"] = round1(l.streamBytesPerS / 1e3)
			}
			// Every stream must see both events of every accepted payment:
			// streams razao sends more than its byte budget fall behind
			// and catch up once the payments end.
			want := int64(2 * res.Accepted)
			paymentsDone := time.Now()
			deadline := paymentsDone.Add(sseCatchUp)
			var lo, hi int64
			for {
				lo, hi = want, 0
				for i := range counts {
					if opened.Load() == 0 {
						break
					}
					n := counts[i].Load()
					lo, hi = min(lo, n), max(hi, n)
				}
				if lo >= want || time.Now().After(deadline) || ctx.Err() != nil {
					break
				}
				time.Sleep(50 * time.Millisecond)
			}
			res.Extra["catch_up_s"] = round2(time.Since(paymentsDone).Seconds())
			cancel()
			wg.Wait()
			t.CloseIdleConnections()
			res.Extra["events_per_stream_min"] = lo
			res.Extra["events_per_stream_max"] = hi
			if lo < want {
				res.violate("a stream received %d events within %s of the last payment applied, want %d", lo, sseCatchUp, want)
			}
		}
	})
}

// sseCatchUp bounds how long after the last payment applied the streams
// may take to receive every event: 1,000 streams of 12,000 events are
// about 3.2 GB, which razao's default budget of 32 MiB a second sends in
// about 100 s.
const sseCatchUp = 180 * time.Second

// bcbMemory: one bcb-pix callback with -bcb-items Pix items, each paying a
// registered charge, posted to the bcb-pix endpoint -bcb-endpoint with the
// URL secret in $RAZAO_LOAD_BCB_SECRET. It reports the answer time and
// razao's peak resident memory (VmHWM, reset just before through
// /proc/<pid>/clear_refs) until every item is applied. The figures are
// measurements, not pass criteria; the answer must be 200 and every item
// applied. Needs -server-pid and -database-url.
func (l *loader) bcbMemory(ctx context.Context) *result {
	n := l.opt.bcbItems
	res := newResult(l, "bcb-memory", 1, 1)
	secret := os.Getenv("RAZAO_LOAD_BCB_SECRET")
	if l.opt.serverPID == 0 || l.db == nil || secret == "" {
		res.violate("bcb-memory needs -server-pid, -database-url and RAZAO_LOAD_BCB_SECRET")
		return res
	}
	prefix := l.runID + "B" // txid: 1-35 alphanumerics, no dash
	specs := make([]chargeSpec, n)
	for i := range specs {
		specs[i] = chargeSpec{ID: prefix + strconv.Itoa(i), Amount: 1000 + int64(i*37%9000), Partner: partner(i), CommissionBP: 1000, Access: "course:load"}
	}
	t0 := time.Now()
	l.logf("bcb-memory: registering %d charges", n)
	if err := l.register(ctx, specs); err != nil {
		res.violate("setup: %v", err)
		return res
	}
	res.SetupS = round2(time.Since(t0).Seconds())
	now := time.Now().UTC().Format(time.RFC3339)
	var body bytes.Buffer
	body.WriteString(`{"pix":[`)
	for i, s := range specs {
		if i > 0 {
			body.WriteByte(',')
		}
		id := strings.ToUpper(l.runID[2:]) + strconv.Itoa(i)
		fmt.Fprintf(&body, `{"endToEndId":"E%s%s","txid":%q,"valor":%q,"horario":%q}`,
			strings.Repeat("0", 31-len(id)), id, s.ID, reais(s.Amount), now)
	}
	body.WriteString(`]}`)
	res.Extra["items"] = n
	res.Extra["body_bytes"] = body.Len()
	before, err := resetPeakRSS(l.opt.serverPID)
	if err != nil {
		res.violate("reset razao's peak RSS: %v", err)
		return res
	}
	res.Extra["rss_before_mb"] = round1(before)
	res.cpuStart = sampleCPU(l.opt.serverPID)
	res.started = time.Now()
	rp := l.do(ctx, l.client, http.MethodPost, "/webhooks/"+l.opt.bcbEndpoint+"?hmac="+secret, body.Bytes(), http.Header{"Content-Type": {"application/json"}})
	res.WallS = rp.dur.Seconds()
	res.durs[0], res.kinds[0] = rp.dur, "callback"
	res.tally([]reply{rp}, []bool{rp.err == nil})
	peakAnswer, _ := peakRSS(l.opt.serverPID)
	res.Extra["code"] = rp.code
	res.Extra["answer_ms"] = round1(rp.dur.Seconds() * 1000)
	res.Extra["peak_rss_mb_until_answer"] = round1(peakAnswer)
	if rp.err != nil || rp.code != http.StatusOK {
		// The client's error names the URL, secret included.
		msg := "none"
		if rp.err != nil {
			msg = strings.ReplaceAll(rp.err.Error(), secret, "***")
		}
		res.violate("callback answered %d %s (transport error: %s)", rp.code, bytes.TrimSpace(rp.body[:min(len(rp.body), 300)]), msg)
	}
	l.waitApplied(ctx, res, prefix)
	peak, err := peakRSS(l.opt.serverPID)
	if err != nil {
		res.warn("peak RSS: %v", err)
	}
	res.Extra["peak_rss_mb"] = round1(peak)
	if res.Applied != n && rp.code == http.StatusOK {
		res.violate("%d of %d items applied", res.Applied, n)
	}
	if peak >= 64 || rp.dur >= time.Second {
		res.warn("over the target of issue 11 (< 64 MB, answered < 1 s): %.1f MB, %.0f ms", peak, rp.dur.Seconds()*1000)
	}
	return res
}

// resetPeakRSS resets the process's peak resident set (VmHWM) to its
// current RSS and returns that, in MB.
func resetPeakRSS(pid int) (float64, error) {
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		return 0, err
	}
	return procStatusMB(pid, "VmRSS:")
}

// peakRSS is the process's VmHWM in MB.
func peakRSS(pid int) (float64, error) { return procStatusMB(pid, "VmHWM:") }

func procStatusMB(pid int, field string) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", field, pid)
}

// eventLine starts every event's second line (after its "id: " line).
var eventLine = []byte("\nevent: ")

// countEvents counts the events of a stream, and its bytes into received,
// until it ends, in large reads and without splitting lines: the readers
// of 1,000 streams share the machine with razao, and a line scanner's
// cost per line would weigh on razao's figures as much as its own work
// (docs/performance.md, "The load tool's stream readers"). A match split
// across two reads is found by keeping the last bytes of each read.
func countEvents(r io.Reader, n, received *atomic.Int64) {
	buf := make([]byte, 64<<10)
	keep := 0
	for {
		m, err := r.Read(buf[keep:])
		if m > 0 {
			received.Add(int64(m))
			data := buf[:keep+m]
			n.Add(int64(bytes.Count(data, eventLine)))
			keep = min(len(eventLine)-1, len(data))
			copy(buf, data[len(data)-keep:])
		}
		if err != nil {
			return
		}
	}
}
