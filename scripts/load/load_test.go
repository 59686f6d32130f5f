package main

import (
	"encoding/base64"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The published Standard Webhooks vector (PSP-SCHEMES.md).
func TestStandardSignatureVector(t *testing.T) {
	key, _ := base64.StdEncoding.DecodeString(strings.TrimPrefix("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_"))
	got := standardSignature(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", []byte(`{"test": 2432232314}`))
	if want := "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// The Hodle vector of PSP-SCHEMES.md.
func TestHodleSignatureVector(t *testing.T) {
	body := `{"event":"DEPOSIT_ASSET_FAILED","data":{"eventId":"event-1","externalId":"order-1"}}`
	got := hodleSignature([]byte("example-secret-for-local-tests-only"), "1790035200", []byte(body))
	if want := "b10d8351f2430ba0a339249eb20aaf237da1f47a5b213e9d680035b0fb7bf050"; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

func TestOnlyLoopbackTargets(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8080", "http://localhost:1", "http://[::1]:8080", "http://127.9.9.9"} {
		if _, err := loopbackURL(ok); err != nil {
			t.Errorf("%s refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1:8080", "http://192.168.1.2", "http://example.com", "http://0.0.0.0:8080",
		"ftp://127.0.0.1", "http://127.0.0.1.nip.io", "http://[::ffff:10.0.0.1]:80"} {
		if _, err := loopbackURL(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	for _, bad := range []string{"postgres://u@10.1.1.1/db", "postgres://u@127.0.0.1/db?host=db.example.com", "mysql://127.0.0.1/x"} {
		if err := checkDBURL(bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
	if err := checkDBURL("postgres://postgres@127.0.0.1:5432/x?sslmode=disable"); err != nil {
		t.Error(err)
	}
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 1; i <= 100; i++ {
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	l := summarize(ds)
	if l.P50 != 50 || l.P90 != 90 || l.P99 != 99 || l.Max != 100 || l.Mean != 50.5 {
		t.Fatalf("%+v", l)
	}
}

func TestMixedPlan(t *testing.T) {
	for _, shuffled := range []bool{false, true} {
		for seed := uint64(1); seed < 50; seed++ {
			n := 1 + int(seed*37%500)
			charges, ops := planMixed(n, rand.New(rand.NewPCG(seed, 1)), shuffled)
			if len(ops) != n {
				t.Fatalf("seed %d: %d ops, want %d", seed, len(ops), n)
			}
			seen := map[[2]int]bool{}
			next := make([]int, len(charges))
			for _, op := range ops {
				key := [2]int{op.charge, op.refund}
				if seen[key] {
					t.Fatalf("seed %d: op %v twice", seed, op)
				}
				seen[key] = true
				if !shuffled && op.refund != next[op.charge]-1 {
					t.Fatalf("seed %d: charge %d op %d out of order", seed, op.charge, op.refund)
				}
				next[op.charge]++
			}
			for i, c := range charges {
				var sum int64
				for _, r := range c.refunds {
					if r <= 0 {
						t.Fatalf("seed %d: charge %d has a refund of %d", seed, i, r)
					}
					sum += r
				}
				if sum > c.amount {
					t.Fatalf("seed %d: charge %d refunds %d of %d", seed, i, sum, c.amount)
				}
			}
		}
	}
}

// CPU per delivery: each counter's time between the samples over the
// deliveries, in µs; a backend born after the first sample counts whole.
func TestPerDelivery(t *testing.T) {
	a := cpuSample{busy: 10, server: 2, postgres: map[string]float64{"1": 1}}
	b := cpuSample{busy: 13, server: 3.2, postgres: map[string]float64{"1": 2.5, "2": 0.5}}
	got := perDelivery(a, b, 42, 2000)
	want := map[string]float64{"machine": 1500, "razao": 600, "postgres": 1000}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %v µs, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if perDelivery(a, b, 42, 0) != nil {
		t.Error("no deliveries: want no figure")
	}
}
