package main

import (
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// crashReceiver records the webhook-ids it accepts, in order, and each
// signature's verdict.
type crashReceiver struct {
	mu     sync.Mutex
	wh     *standardwebhooks.Webhook
	ids    []int64
	forged int
}

func (c *crashReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	time.Sleep(3 * time.Millisecond) // an app's work: the kill lands mid-stream
	var ev struct {
		ID int64 `json:"id"`
	}
	json.Unmarshal(body, &ev)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wh.Verify(body, r.Header) != nil {
		c.forged++
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	c.ids = append(c.ids, ev.ID)
}

func (c *crashReceiver) snapshot() []int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]int64(nil), c.ids...)
}

// firstSeen is ids without repeats, in the order each first came.
func firstSeen(ids []int64) []int64 {
	seen := map[int64]bool{}
	var out []int64
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}
