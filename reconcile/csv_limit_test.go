package reconcile

import (
	"bytes"
	"encoding/csv"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// FuzzCSVRecordLimitAgreesWithParser: the record limit's verdict is
// encoding/csv's own. Read without a limit, every Read of the parser
// consumes some bytes (InputOffset's step); the limited reader refuses
// the file iff one step is longer than the limit, and until then returns
// exactly the parser's records and errors. The one leeway: the over-long
// record may first come back as the ParseError the parser finds in its
// first max bytes (a bare quote), and the refusal at the next Read.
func FuzzCSVRecordLimitAgreesWithParser(f *testing.F) {
	long := strings.Repeat("x", 300)
	for _, s := range []struct {
		data string
		max  uint16
	}{
		{"a,b\n1,2\n", 3},
		{"a,b\n1,2\n", 4},
		{"a,b\n1,2", 3},
		{"a,b\r\n1,2\r\n", 4},
		{"a,b\n\n\n\n1,2\n", 4},
		{"a,b\n" + long + ",1\n", 302},
		{"a,b\n" + long + ",1\n", 303},
		// A stray quote, then a quoted field of short lines that runs to
		// the end: one record of the whole file for the parser.
		{"a,b\nx\"y,1\n\"" + strings.Repeat("z\n", 200) + "\",2\n3,4\n", 40},
		{"a,b\nx\"y,1\n\"" + strings.Repeat("z\n", 200) + "\",2\n3,4\n", 500},
		// The same stray quote with only short records after it.
		{"a,b\nx\"y,1\n3,4\n5,6\n", 8},
		{"a,b\n\"open,1\n" + strings.Repeat("3,4\n", 100), 16},
		{"a,b\n\"x\"y,1\n3,4\n", 8},
		{"a,b\n\"x\"\"y\",1\n3,4\n", 16},
		{"\"a\nb\",c\n" + long, 4000},
		{strings.Repeat("q", 5000) + "\n1\n", 4999},
		{strings.Repeat("q", 5000) + "\n1\n", 5001},
		{strings.Repeat("\"q\"\"\n", 1500) + "\n1\n", 2000},
	} {
		f.Add([]byte(s.data), s.max-1, false)
	}
	f.Add([]byte("a;b\nx;\"y\n;z\"\n1;2\n"), uint16(5), true)
	f.Fuzz(func(t *testing.T, data []byte, max uint16, semicolon bool) {
		limit := int64(max) + 1
		comma := ','
		if semicolon {
			comma = ';'
		}
		type read struct {
			rec  []string
			err  error
			step int64
		}
		plain := csv.NewReader(bytes.NewReader(data))
		plain.Comma = comma
		var want []read
		over := -1 // the first Read that consumes more than the limit
		for i := 0; ; i++ {
			before := plain.InputOffset()
			rec, err := plain.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			step := plain.InputOffset() - before
			want = append(want, read{slices.Clone(rec), err, step})
			if over < 0 && step > limit {
				over = i
			}
		}
		lim := newLimitedCSV(bytes.NewReader(data), limit)
		lim.Comma = comma
		for i := 0; ; i++ {
			rec, err := lim.Read()
			switch {
			case errors.Is(err, io.EOF):
				if over >= 0 {
					t.Fatalf("limit %d: accepted the file, whose record %d the parser read as %d bytes", limit, over, want[over].step)
				}
				if i != len(want) {
					t.Fatalf("limit %d: %d records, the parser read %d", limit, i, len(want))
				}
				return
			case errors.Is(err, errRecordTooLong):
				var pe *csv.ParseError
				switch {
				case over < 0:
					t.Fatalf("limit %d: refused record %d (%v), the parser read no record longer", limit, i, err)
				case i == over:
				case i == over+1 && errors.As(want[over].err, &pe):
				default:
					t.Fatalf("limit %d: refused at record %d, the parser's first record longer than it is %d (%d bytes)", limit, i, over, want[over].step)
				}
				return
			case i >= len(want):
				t.Fatalf("limit %d: record %d (%q, %v) past the parser's %d", limit, i, rec, err, len(want))
			case i == over:
				// Read up to the limit, the record is cut: only an error
				// found before the cut may come back, and it is the
				// parser's.
				if err == nil || err.Error() != want[i].err.Error() {
					t.Fatalf("limit %d: record %d longer than it (%d bytes) read as %q, %v; the parser's error %v", limit, i, want[i].step, rec, err, want[i].err)
				}
			default:
				if !slices.Equal(rec, want[i].rec) || errString(err) != errString(want[i].err) {
					t.Fatalf("limit %d: record %d: %q, %v; the parser's %q, %v", limit, i, rec, err, want[i].rec, want[i].err)
				}
			}
		}
	})
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// strayQuoteStatement generates, without holding it, a statement file
// whose second line holds a bare quote and whose third opens a quoted
// field that runs for size bytes of short lines: for encoding/csv, one
// record of the whole file.
type strayQuoteStatement struct {
	head, tail string
	size, read int64
}

func newStrayQuoteStatement(size int64, stray bool) *strayQuoteStatement {
	ts := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).Format(time.RFC3339)
	q := ""
	if stray {
		q = `"`
	}
	return &strayQuoteStatement{
		head: "trackId,externalId,type,amount,date,refundId\n" +
			"t1,o1" + q + ",DEPOSIT,1.00," + ts + ",\n" +
			"\"",
		tail: "\",o2,DEPOSIT,1.00," + ts + ",\n",
		size: size,
	}
}

func (s *strayQuoteStatement) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		h, body := int64(len(s.head)), int64(len(s.head))+s.size
		var k int
		switch at := s.read; {
		case at < h:
			k = copy(p[n:], s.head[at:])
		case at < body:
			// "z\n" repeated: a short line, then another.
			k = int(min(int64(len(p)-n), body-at))
			for j := range k {
				p[n+j] = "z\n"[(at-h+int64(j))%2]
			}
		case at < body+int64(len(s.tail)):
			k = copy(p[n:], s.tail[at-body:])
		case n == 0:
			return 0, io.EOF
		default:
			return n, nil
		}
		n += k
		s.read += int64(k)
	}
	return n, nil
}

// TestCSVStrayQuoteDoesNotLiftTheRecordLimit: a bare quote early in a
// statement does not let a quoted field of the rest of the file through
// the record limit. The 40 MiB field is refused as too long a record
// once the parser has read about the limit of it (the two buffers in
// front of it, 64 KiB and 4 KiB, aside), with or without the stray quote:
// not read whole into memory, nor taken as one line.
func TestCSVStrayQuoteDoesNotLiftTheRecordLimit(t *testing.T) {
	t.Parallel()
	m, err := CSVMapping{Dialect: "rfc4180", PSPID: "trackId", ChargeRef: "externalId", Kind: "type",
		PaidValues: []string{"DEPOSIT"}, RefundValues: []string{"REFUND"}, Amount: "amount", Time: "date",
		RefundID: "refundId"}.build(time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	const size = 40 << 20
	for _, stray := range []bool{false, true} {
		file := newStrayQuoteStatement(size, stray)
		cr, err := newCSVReader(m, file)
		if err != nil {
			t.Fatal(err)
		}
		var lines []Line
		for {
			l, err := cr.next()
			if errors.Is(err, io.EOF) {
				t.Fatalf("stray quote %v: read to the end (%d bytes) as %d line(s), the %d MiB field not refused", stray, file.read, len(lines), size>>20)
			}
			if err != nil {
				if !errors.Is(err, ErrInput) || !errors.Is(err, errRecordTooLong) || !strings.Contains(err.Error(), "longer than 65536 bytes") {
					t.Fatalf("stray quote %v: %v, want ErrInput saying a record is longer than 65536 bytes", stray, err)
				}
				break
			}
			lines = append(lines, l)
		}
		if read, most := file.read-int64(len(file.head)), int64(maxCSVRecord+64<<10+4<<10); read > most {
			t.Fatalf("stray quote %v: read %d bytes of the field before refusing it, want at most %d", stray, read, most)
		}
		// The line before the field: read, and with the stray quote an
		// invalid line, as encoding/csv reads it.
		if len(lines) != 1 || (lines[0].Kind == KindInvalid) != stray {
			t.Fatalf("stray quote %v: lines before the field %+v", stray, lines)
		}
	}
}
