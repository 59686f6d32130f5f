package pgarray_test

import (
	"database/sql/driver"
	"strings"
	"testing"
	"time"

	"github.com/lib/pq"

	"github.com/razao/razao/internal/pgarray"
)

// hostile are elements an array literal must carry intact: quotes,
// backslashes, braces, commas, the word NULL, blanks, an empty string,
// multi-byte text.
var hostile = []string{"", "plain", `a"b`, `c\d`, `\"`, `{x,y}`, "NULL", "null", " lead", "trail ", "a,b", "ação ✓", strings.Repeat("x", 600)}

func value(t testing.TB, v driver.Valuer) driver.Value {
	t.Helper()
	got, err := v.Value()
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func same(t testing.TB, what string, got, want driver.Value) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: got %#v, want lib/pq's %#v", what, got, want)
	}
}

func TestTextIsWhatLibPQSends(t *testing.T) {
	for _, a := range [][]string{nil, {}, hostile, hostile[:1], {"only"}} {
		same(t, "text", value(t, pgarray.Text(a)), value(t, pq.StringArray(a)))
	}
}

func TestNullsAreWhatLibPQSends(t *testing.T) {
	s := func(v string) *string { return &v }
	n := func(v int64) *int64 { return &v }
	tm := func(v time.Time) *time.Time { return &v }
	var texts []*string
	for _, h := range hostile {
		texts = append(texts, s(h), nil)
	}
	sp := time.FixedZone("BRT", -3*3600)
	odd := time.FixedZone("LMT", -(3*3600 + 6*60 + 28)) // an offset in seconds
	for _, c := range []struct {
		name      string
		got, want driver.Valuer
	}{
		{"nil text", pgarray.NullText(nil), pq.Array([]*string(nil))},
		{"no text", pgarray.NullText{}, pq.Array([]*string{})},
		{"text", pgarray.NullText(texts), pq.Array(texts)},
		{"nil bigint", pgarray.NullInt64(nil), pq.Array([]*int64(nil))},
		{"bigint", pgarray.NullInt64{n(0), nil, n(-1), n(1<<63 - 1), n(-1 << 63)}, pq.Array([]*int64{n(0), nil, n(-1), n(1<<63 - 1), n(-1 << 63)})},
		{"nil time", pgarray.NullTime(nil), pq.Array([]*time.Time(nil))},
		{"time", pgarray.NullTime{tm(time.Date(2026, 8, 10, 12, 0, 0, 123456789, time.UTC)), nil, tm(time.Date(2026, 1, 1, 0, 0, 0, 0, sp)),
			tm(time.Date(1890, 1, 1, 0, 0, 0, 0, odd)), tm(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)), tm(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))},
			pq.Array([]*time.Time{tm(time.Date(2026, 8, 10, 12, 0, 0, 123456789, time.UTC)), nil, tm(time.Date(2026, 1, 1, 0, 0, 0, 0, sp)),
				tm(time.Date(1890, 1, 1, 0, 0, 0, 0, odd)), tm(time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)), tm(time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC))})},
	} {
		same(t, c.name, value(t, c.got), value(t, c.want))
	}
}

func FuzzTextIsWhatLibPQSends(f *testing.F) {
	for _, h := range hostile {
		f.Add(h, `x"y\z`)
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		same(t, "text", value(t, pgarray.Text{a, b}), value(t, pq.StringArray{a, b}))
	})
}

// BenchmarkText encodes a batch's worth of stored events (64 of about
// 300 bytes) both ways.
func BenchmarkText(b *testing.B) {
	evs := make([]string, 64)
	for i := range evs {
		evs[i] = `{"Kind":"paid","Type":"charge.paid","EventID":"msg_` + strings.Repeat("7", 20) + `","ChargeID":"load-ch-000123","PSPRef":"","RefundID":"","Amount":4990,"HasAmount":true,"FullRefund":false,"Fee":0,"HasFee":false,"OccurredAt":"2026-12-02T07:00:00Z","Extra":null}`
	}
	b.Run("pgarray", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			value(b, pgarray.Text(evs))
		}
	})
	b.Run("lib-pq", func(b *testing.B) {
		b.ReportAllocs()
		for range b.N {
			value(b, pq.StringArray(evs))
		}
	})
}
