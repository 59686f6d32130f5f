package reconcile

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/razao/razao/charges"
	"github.com/razao/razao/money"
	"github.com/razao/razao/reports"
)

// CSVMapping says which column of an endpoint's statement file holds what,
// by header name, and how the file is written.
type CSVMapping struct {
	// Dialect is rfc4180 (',' and a decimal point) or br (';', a decimal
	// comma, an optional BOM).
	Dialect   string `yaml:"dialect"`
	PSPID     string `yaml:"psp_id"`     // the PSP's id of the payment (required)
	ChargeRef string `yaml:"charge_ref"` // our charge id as the PSP echoes it
	// Kind is the column telling payments from refunds; with none, every
	// line is a payment. PaidValues and RefundValues are its values
	// (default "paid" and "refunded"); any other value is an invalid line.
	Kind         string   `yaml:"kind"`
	PaidValues   []string `yaml:"paid_values"`
	RefundValues []string `yaml:"refund_values"`
	Amount       string   `yaml:"amount"`      // required
	AmountUnit   string   `yaml:"amount_unit"` // reais (default) or centavos, for amount and fee
	Fee          string   `yaml:"fee"`
	Time         string   `yaml:"time"`        // required
	TimeLayout   string   `yaml:"time_layout"` // a Go time layout (default RFC 3339), read in the ledger's time zone
	RefundID     string   `yaml:"refund_id"`   // required when refunds are listed
}

// csvMapping is a checked CSVMapping.
type csvMapping struct {
	CSVMapping
	dialect reports.Dialect
	cents   bool
	loc     *time.Location
}

func (m CSVMapping) build(loc *time.Location) (*csvMapping, error) {
	d, err := reports.ParseDialect(m.Dialect)
	if err != nil {
		return nil, fmt.Errorf("%w: csv dialect: %w", ErrConfig, err)
	}
	out := &csvMapping{CSVMapping: m, dialect: d, loc: loc}
	switch m.AmountUnit {
	case "", "reais":
	case "centavos":
		out.cents = true
	default:
		return nil, fmt.Errorf("%w: csv amount_unit %q (want reais or centavos)", ErrConfig, m.AmountUnit)
	}
	if m.PSPID == "" || m.Amount == "" || m.Time == "" {
		return nil, fmt.Errorf("%w: csv needs the psp_id, amount and time columns", ErrConfig)
	}
	if m.Kind != "" && m.RefundID == "" {
		return nil, fmt.Errorf("%w: csv with a kind column needs the refund_id column", ErrConfig)
	}
	if len(out.PaidValues) == 0 {
		out.PaidValues = []string{"paid"}
	}
	if len(out.RefundValues) == 0 {
		out.RefundValues = []string{"refunded"}
	}
	if out.TimeLayout == "" {
		out.TimeLayout = time.RFC3339
	}
	return out, nil
}

// The inbox event types of CSV lines: a CSV carries no notification's
// event id, so its lines are keyed by the PSP's ids under types of their
// own, and a later webhook is recognised as the same payment by its PSP id
// (the charge's paid_ref), not by its key.
const (
	csvPaidType   = "statement:paid"
	csvRefundType = charges.StatementRefundType
)

// maxCSVFields bounds the columns of a statement file, and maxCSVRecord
// the bytes of one record: a hostile file cannot make one line cost more.
const (
	maxCSVFields = 64
	maxCSVRecord = 64 << 10
)

// csvReader reads statement lines from a CSV file, one at a time.
type csvReader struct {
	m    *csvMapping
	r    *limitedCSV
	col  map[string]int
	line int64
}

var utf8BOM = []byte("\xEF\xBB\xBF")

func newCSVReader(m *csvMapping, r io.Reader) (*csvReader, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	if b, err := br.Peek(3); err == nil && bytes.Equal(b, utf8BOM) {
		br.Discard(3)
	}
	cr := newLimitedCSV(br, maxCSVRecord)
	cr.ReuseRecord = true
	if m.dialect == reports.Brazil {
		cr.Comma = ';'
	}
	header, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("%w: csv header: %w", ErrInput, err)
	}
	if len(header) > maxCSVFields {
		return nil, fmt.Errorf("%w: csv header has %d columns, more than %d", ErrInput, len(header), maxCSVFields)
	}
	c := &csvReader{m: m, r: cr, col: map[string]int{}}
	for i, h := range header {
		c.col[strings.TrimSpace(h)] = i
	}
	for _, name := range []string{m.PSPID, m.ChargeRef, m.Kind, m.Amount, m.Fee, m.Time, m.RefundID} {
		if _, ok := c.col[name]; name != "" && !ok {
			return nil, fmt.Errorf("%w: csv header has no column %.64q", ErrInput, name)
		}
	}
	return c, nil
}

// next returns the next line, io.EOF after the last. A record that cannot
// be read as a line is returned as an invalid line; an error is a file
// that cannot be read on.
func (c *csvReader) next() (Line, error) {
	rec, err := c.r.Read()
	if errors.Is(err, io.EOF) {
		return Line{}, io.EOF
	}
	c.line++
	// A record that is not CSV (a bare quote, too few fields) is one
	// invalid line; the reader goes on at the next. Our own limit on a
	// record's length is not a ParseError: it ends the file.
	var pe *csv.ParseError
	if errors.As(err, &pe) && !errors.Is(err, errRecordTooLong) {
		return invalid(pe.Err.Error()), nil
	}
	if err != nil {
		return Line{}, fmt.Errorf("%w: csv line %d: %w", ErrInput, c.line, err)
	}
	l, err := c.parse(rec)
	if err != nil {
		return invalid(err.Error()), nil
	}
	return l, nil
}

func invalid(detail string) Line { return Line{Kind: KindInvalid, Detail: truncate(detail, 500)} }

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

func (c *csvReader) field(rec []string, name string) (string, error) {
	if name == "" {
		return "", nil
	}
	v := strings.TrimSpace(rec[c.col[name]])
	switch {
	case len(v) > maxIDLength:
		return "", fmt.Errorf("column %.64q: longer than %d bytes", name, maxIDLength)
	case strings.IndexByte(v, 0) >= 0:
		return "", fmt.Errorf("column %.64q: holds a NUL character", name)
	case !utf8.ValidString(v):
		return "", fmt.Errorf("column %.64q: not valid UTF-8", name)
	}
	return v, nil
}

func (c *csvReader) parse(rec []string) (Line, error) {
	var f [7]string
	for i, name := range []string{c.m.PSPID, c.m.ChargeRef, c.m.Kind, c.m.Amount, c.m.Fee, c.m.Time, c.m.RefundID} {
		v, err := c.field(rec, name)
		if err != nil {
			return Line{}, err
		}
		f[i] = v
	}
	psp, ref, kind, amount, fee, at, refund := f[0], f[1], f[2], f[3], f[4], f[5], f[6]
	l := Line{Kind: KindPaid, PSPID: psp, ChargeRef: ref, EventType: csvPaidType, EventID: psp}
	switch {
	case c.m.Kind == "" || slices.Contains(c.m.PaidValues, kind):
	case slices.Contains(c.m.RefundValues, kind):
		// A refund id is the PSP's for one payment (a Pix's devoluções are
		// numbered per Pix): the key holds the payment too, or two
		// payments' refunds "D1" would be one line, and one lost. The
		// payment's id is length-prefixed, so that ids holding the
		// separator cannot make two keys one ("a:b"+"c", "a"+"b:c").
		l.Kind, l.RefundID, l.EventType = KindRefunded, refund, csvRefundType
		l.EventID = strconv.Itoa(len(psp)) + ":" + psp + ":" + refund
	default:
		return Line{}, fmt.Errorf("kind %.32q is neither a payment nor a refund", kind)
	}
	if psp == "" {
		return Line{}, fmt.Errorf("no PSP id")
	}
	if l.Kind == KindRefunded && refund == "" {
		return Line{}, fmt.Errorf("no refund id")
	}
	var err error
	if l.Amount, err = c.amount(amount); err != nil {
		return Line{}, fmt.Errorf("amount: %w", err)
	}
	if fee != "" {
		if l.Fee, err = c.amountOrZero(fee); err != nil {
			return Line{}, fmt.Errorf("fee: %w", err)
		}
		l.HasFee = true
	}
	if l.At, err = time.ParseInLocation(c.m.TimeLayout, at, c.m.loc); err != nil {
		return Line{}, fmt.Errorf("time %.40q: not of the layout %s", at, c.m.TimeLayout)
	}
	if l.At.IsZero() {
		// Go's zero time, which everything downstream reads as "no time".
		return Line{}, fmt.Errorf("time %.40q is before the ledger's go-live", at)
	}
	return l, nil
}

// amount reads an amount in the mapping's unit and dialect.
func (c *csvReader) amount(s string) (int64, error) {
	if c.m.cents {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil || n <= 0 || !allDigits(s) {
			return 0, fmt.Errorf("%.24q is not a positive integer of centavos", s)
		}
		return n, nil
	}
	if c.m.dialect == reports.Brazil {
		// 1.234,56: '.' groups thousands, ',' is the decimal separator.
		s = strings.ReplaceAll(strings.ReplaceAll(s, ".", ""), ",", ".")
	}
	return money.ParseReais(s)
}

// amountOrZero is amount that also takes a zero (a fee).
func (c *csvReader) amountOrZero(s string) (int64, error) {
	if strings.Trim(s, "0.,") == "" && s != "" {
		return 0, nil
	}
	return c.amount(s)
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// limitedCSV is a csv.Reader that never buffers a record longer than max
// bytes. Where a record ends is the parser's own call: its InputOffset
// after each Read. A count of our own, keeping track of quotes beside the
// parser, disagreed with it (one bare quote flipped it, and a whole
// file's quoted field went through), so the limit is on what the parser
// may read: at most max bytes past the end of the record it returned
// last.
type limitedCSV struct {
	*csv.Reader
	lim *recordLimit
}

func newLimitedCSV(r io.Reader, max int64) *limitedCSV {
	lim := &recordLimit{r: r, max: max}
	return &limitedCSV{Reader: csv.NewReader(lim), lim: lim}
}

// Read is csv.Reader's, with the limit moved to the end of the record
// read.
func (c *limitedCSV) Read() ([]string, error) {
	rec, err := c.Reader.Read()
	c.lim.end = c.InputOffset()
	return rec, err
}

// errRecordTooLong is a record longer than the limit: a line that long,
// or a quoted field left open (a stray quote makes the rest of the file
// one field).
var errRecordTooLong = errors.New("csv record too long")

// recordLimit is what encoding/csv reads from: it gives the parser no
// byte past end+max, where end is the parser's offset after the last
// record it returned. A record up to max bytes long (its line ends and
// any empty lines before it included) is read whole before the limit;
// a longer one needs a byte past it, and gets an error instead, which
// stays: the file is not read on.
type recordLimit struct {
	r    io.Reader
	max  int64
	read int64 // bytes given to the parser
	end  int64 // the parser's offset after its last record
	err  error
}

func (l *recordLimit) Read(p []byte) (int, error) {
	if l.err != nil {
		return 0, l.err
	}
	room := l.end + l.max - l.read
	if room <= 0 {
		// The parser wants more of a record already max bytes long,
		// unless the file ends here, which it must still be told.
		var b [1]byte
		if _, err := io.ReadFull(l.r, b[:]); err == io.EOF {
			return 0, io.EOF
		} else if err != nil {
			l.err = err
			return 0, err
		}
		l.err = fmt.Errorf("%w: a record (line, or quoted field) longer than %d bytes, from byte %d: a quote left open?", errRecordTooLong, l.max, l.end)
		return 0, l.err
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	return n, err
}
