package reports

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/internal/kind"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// LedgerFormat is a plain-text accounting file format that ledger tools
// read: the month's journal as hledger or beancount load it.
type LedgerFormat int

// The ledger file formats.
const (
	// Hledger: an hledger journal (hledger 1.25 and later): account and
	// commodity directives, then the transactions.
	Hledger LedgerFormat = iota + 1
	// Beancount: a beancount v2 file: options, commodity and open
	// directives, then the transactions.
	Beancount
)

// ErrUnknownLedgerFormat: a ledger file format other than hledger and
// beancount.
var ErrUnknownLedgerFormat = kind.New(kind.NotFound, "unknown-export", "No such export", "unknown ledger file format")

// ErrLedgerAccount: an account code that cannot be written as an account
// name of the format, or two codes that would be written as one name (the
// file would merge their balances). The chart's codes never are
// (accounts.ValidateCode); this is the barrier if that ever changes.
var ErrLedgerAccount = errors.New("account not representable in the ledger file")

// ParseLedgerFormat parses "hledger" and "beancount".
func ParseLedgerFormat(s string) (LedgerFormat, error) {
	switch s {
	case "hledger":
		return Hledger, nil
	case "beancount":
		return Beancount, nil
	}
	return 0, fmt.Errorf("%w: %.32q (want hledger or beancount)", ErrUnknownLedgerFormat, s)
}

// String is the format's name as ParseLedgerFormat reads it.
func (f LedgerFormat) String() string {
	switch f {
	case Hledger:
		return "hledger"
	case Beancount:
		return "beancount"
	}
	return "LedgerFormat(" + strconv.Itoa(int(f)) + ")"
}

// ContentType is the MIME type of the format's files: both are UTF-8 text
// with no registered type of their own.
func (f LedgerFormat) ContentType() string { return "text/plain; charset=utf-8" }

// LedgerFileName is the conventional name of month m's journal in format
// f: razao-journal-2026-08.hledger, razao-journal-2026-08.beancount (the
// extensions each tool recognises its format by).
func LedgerFileName(m periods.Month, f LedgerFormat) string {
	return "razao-" + string(ExportJournal) + "-" + m.String() + "." + f.String()
}

// WriteLedger writes month m's journal to w as a file of format f and
// returns the number of transactions written: one per posting set of the
// month, in set id order, dated by its competence, with its event time
// and ids (posting set, kind, charge, refund, partner, idempotency key)
// as tags (hledger) or metadata (beancount), each posting with its id.
// Amounts are the postings' centavos written exactly, with two decimals
// and the posting's currency as the commodity.
//
// The file declares what it uses first: the currencies, and every account
// posted to in the month (hledger: account directives with their type;
// beancount: open directives dated the month's first day, with the
// account's razao code as razao_account metadata). It stands alone: each
// tool checks it as it is, and its balances are the month's movements,
// the trial balance's closing less its opening. The accounts are named
// from the codes generically (LedgerAccount), whatever the chart holds.
//
// Text that razao did not choose (descriptions, ids, keys) cannot break
// the file: '%', every character that is not graphic (NUL, CR, LF, tab,
// the Unicode line separators, bidi overrides), a byte that is not UTF-8,
// a space at either end and the characters the format reserves there
// (hledger: ';' and '|' in the description, ',' in a tag) are written
// %XX, each byte of their UTF-8 in upper-case hex; beancount's strings
// escape '"' and '\' with a backslash as beancount reads them.
//
// As WriteCSV: the bytes depend only on the ledger's data (a closed
// month's file never changes), the postings are streamed so memory
// follows the number of accounts, not of postings, and invalid arguments
// and a failing query are reported before anything reaches w.
func WriteLedger(ctx context.Context, q sqlx.QueryerContext, s Sums, w io.Writer, f LedgerFormat, m periods.Month) (int64, error) {
	if f != Hledger && f != Beancount {
		return 0, fmt.Errorf("%w: %s", ErrUnknownLedgerFormat, f)
	}
	if err := m.Check(); err != nil {
		return 0, err
	}
	var n int64
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		lines, err := s.Lines(ctx, q, m)
		if err != nil {
			return err
		}
		lw, err := newLedgerWriter(w, f, m, lines.Lines)
		if err != nil {
			return fmt.Errorf("%s journal %s: %w", f, m, err)
		}
		err = postings.EachMonthPosting(ctx, q, m, lw.posting)
		if err == nil {
			err = lw.finish()
		}
		n = lw.sets
		if err != nil {
			return fmt.Errorf("%s journal %s: %w", f, m, err)
		}
		return nil
	})
	return n, err
}

// ServeLedger writes month m's journal in format f to w as a download, as
// ServeCSV does a CSV export: headers set on the first byte, started false
// when the error came before it.
func ServeLedger(ctx context.Context, q sqlx.QueryerContext, s Sums, w http.ResponseWriter, f LedgerFormat, m periods.Month) (started bool, err error) {
	out := &lazyHeader{w: w, header: func() {
		w.Header().Set("Content-Type", f.ContentType())
		w.Header().Set("Content-Disposition", `attachment; filename="`+LedgerFileName(m, f)+`"`)
		w.Header().Set("Cache-Control", "no-store")
	}}
	_, err = WriteLedger(ctx, q, s, out, f, m)
	return out.started, err
}

// beancountRoots are beancount's five root accounts (its default option
// names), by razao account type.
var beancountRoots = map[string]string{
	string(accounts.Asset):     "Assets",
	string(accounts.Liability): "Liabilities",
	string(accounts.Equity):    "Equity",
	string(accounts.Income):    "Income",
	string(accounts.Expense):   "Expenses",
}

// hledgerTypes are hledger's account type codes (the type: tag of an
// account directive), by razao account type.
var hledgerTypes = map[string]string{
	string(accounts.Asset):     "A",
	string(accounts.Liability): "L",
	string(accounts.Equity):    "E",
	string(accounts.Income):    "R",
	string(accounts.Expense):   "X",
}

// LedgerAccount is the name account code, of type typ (an accounts.Type),
// has in a file of format f.
//
// hledger: the code itself (codes hold no space, ';' or brackets).
// beancount: the root named by the type (Assets, Liabilities, Equity,
// Income, Expenses), then each segment of the code after its root (the
// root too when it is not the type's usual one, "assets" for an asset),
// its first letter upper-cased and every byte beancount does not take in
// a name ('_', '.') written X and two upper-case hex digits
// (liabilities:commission-payable:p_1 is
// Liabilities:Commission-payable:PX5F1). Codes are lower case, so two
// codes under their type's usual root never share a name; a root of
// another name ("receivables", an asset) could meet one that is
// ("assets:receivables"), and WriteLedger refuses such a pair rather
// than merge them. A code that is not a valid account code, or a type
// that is none of the five, is ErrLedgerAccount.
func LedgerAccount(f LedgerFormat, code, typ string) (string, error) {
	if err := accounts.ValidateCode(code); err != nil {
		return "", fmt.Errorf("%w: %w", ErrLedgerAccount, err)
	}
	root, ok := beancountRoots[typ]
	if !ok {
		return "", fmt.Errorf("%w: %s has type %.20q", ErrLedgerAccount, code, typ)
	}
	if f == Hledger {
		return code, nil
	}
	b := []byte(root)
	first := true
	for seg := range strings.SplitSeq(code, ":") {
		if first {
			first = false
			if seg == strings.ToLower(root) {
				continue
			}
		}
		b = append(b, ':')
		b = beancountComponent(b, seg)
	}
	return string(b), nil
}

// beancountComponent appends seg as a beancount account name component:
// it must start with an upper-case letter or a digit and go on with
// letters, digits and '-'.
func beancountComponent(b []byte, seg string) []byte {
	for i := 0; i < len(seg); i++ {
		c := seg[i]
		switch {
		case i == 0 && 'a' <= c && c <= 'z':
			b = append(b, c+'A'-'a')
		case '0' <= c && c <= '9', c == '-' && i > 0, 'a' <= c && c <= 'z':
			b = append(b, c)
		default:
			b = append(b, 'X', hexDigits[c>>4], hexDigits[c&15])
		}
	}
	return b
}

const hexDigits = "0123456789ABCDEF"

// escapeText appends s to b for a text field of a ledger file: '%', the
// bytes in reserved, every rune that is not graphic, every byte that is
// not UTF-8 and a space at either end are written %XX (each byte of the
// rune's UTF-8); with backslash, '"' and '\' are written \" and \\ (a
// beancount string).
func escapeText(b []byte, s, reserved string, backslash bool) []byte {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		c := s[i]
		switch {
		case r == utf8.RuneError && size <= 1,
			c == '%', size == 1 && strings.IndexByte(reserved, c) >= 0,
			c == ' ' && (i == 0 || i == len(s)-1),
			r != ' ' && !unicode.IsGraphic(r):
			for j := i; j < i+max(size, 1); j++ {
				b = append(b, '%', hexDigits[s[j]>>4], hexDigits[s[j]&15])
			}
		case backslash && (c == '"' || c == '\\'):
			b = append(b, '\\', c)
		default:
			b = append(b, s[i:i+size]...)
		}
		i += max(size, 1)
	}
	return b
}

// ledgerAccount is an account posted to in the month.
type ledgerAccount struct {
	code, typ, currency, name string
}

// ledgerWriter writes one month's file, a posting at a time.
type ledgerWriter struct {
	bw       *bufio.Writer
	f        LedgerFormat
	m        periods.Month
	accounts map[int64]ledgerAccount
	used     []ledgerAccount // by code
	width    int             // the longest account name
	line     []byte
	started  bool
	set      int64 // the set being written, 0 before the first
	sets     int64
}

func newLedgerWriter(w io.Writer, f LedgerFormat, m periods.Month, lines []periods.Line) (*ledgerWriter, error) {
	lw := &ledgerWriter{bw: bufio.NewWriterSize(w, 64<<10), f: f, m: m, accounts: map[int64]ledgerAccount{}, line: make([]byte, 0, 512)}
	names := map[string]string{}
	for _, l := range lines {
		if l.Debits == 0 && l.Credits == 0 {
			continue // an ancestor, or a balance without a move this month
		}
		name, err := LedgerAccount(f, l.Code, l.Type)
		if err != nil {
			return nil, err
		}
		if other, ok := names[name]; ok && other != l.Code {
			return nil, fmt.Errorf("%w: %s and %s would both be %s", ErrLedgerAccount, other, l.Code, name)
		}
		names[name] = l.Code
		a := ledgerAccount{code: l.Code, typ: l.Type, currency: l.Currency, name: name}
		lw.accounts[l.AccountID] = a
		lw.used = append(lw.used, a)
		lw.width = max(lw.width, len(name))
	}
	slices.SortFunc(lw.used, func(a, b ledgerAccount) int { return strings.Compare(a.code, b.code) })
	return lw, nil
}

// header writes what the file declares before its transactions. It is
// written on the first posting (or at the end of an empty month), so a
// failing query leaves w untouched.
func (lw *ledgerWriter) header() {
	lw.started = true
	var currencies []string
	for _, a := range lw.used {
		currencies = append(currencies, a.currency)
	}
	slices.Sort(currencies)
	currencies = slices.Compact(currencies)
	first := lw.m.String() + "-01"
	b := lw.line[:0]
	switch lw.f {
	case Hledger:
		b = append(b, "; razao journal of competence month "+lw.m.String()+", for hledger.\n"+
			"; One transaction per posting set, dated by competence, its ids and event time as tags.\n"+
			"decimal-mark .\n"...)
		for _, c := range currencies {
			b = append(b, "commodity 1000.00 "+c+"\n"...)
		}
		b = append(b, '\n')
		for _, a := range lw.used {
			b = append(b, "account "+a.name+"  ; type: "+hledgerTypes[a.typ]+"\n"...)
		}
	case Beancount:
		b = append(b, "; razao journal of competence month "+lw.m.String()+", for beancount.\n"+
			"; One transaction per posting set, dated by competence, its ids and event time as metadata.\n"+
			"option \"title\" \"razao journal "+lw.m.String()+"\"\n"...)
		for _, c := range currencies {
			b = append(b, "option \"operating_currency\" \""+c+"\"\n"...)
		}
		b = append(b, '\n')
		for _, c := range currencies {
			b = append(b, first+" commodity "+c+"\n"...)
		}
		b = append(b, '\n')
		for _, a := range lw.used {
			b = append(b, first+" open "+a.name+" "+a.currency+"\n  razao_account: \""...)
			b = escapeText(b, a.code, "", true)
			b = append(b, "\"\n"...)
		}
	}
	lw.line = b
	lw.bw.Write(b)
}

// posting writes p, opening its set's transaction when it is the set's
// first.
func (lw *ledgerWriter) posting(p *postings.MonthPosting) error {
	if !lw.started {
		lw.header()
	}
	a, ok := lw.accounts[p.AccountID]
	if !ok {
		return fmt.Errorf("posting %d is on account %d, which the month's figures show no move on", p.PostingID, p.AccountID)
	}
	b := lw.line[:0]
	if p.SetID != lw.set {
		lw.set = p.SetID
		lw.sets++
		b = lw.transaction(b, p)
	}
	amount := money.FormatReais(p.Amount, '.')
	switch lw.f {
	case Hledger:
		b = append(b, "    "...)
		b = appendPadded(b, a.name, lw.width+2)
		b = appendRight(b, amount, 14)
		b = append(b, " "+p.Currency+"  ; posting_id: "...)
		b = strconv.AppendInt(b, p.PostingID, 10)
		b = append(b, '\n')
	case Beancount:
		b = append(b, "  "...)
		b = appendPadded(b, a.name, lw.width+2)
		b = appendRight(b, amount, 14)
		b = append(b, " "+p.Currency+"\n    posting_id: "...)
		b = strconv.AppendInt(b, p.PostingID, 10)
		b = append(b, '\n')
	}
	lw.line = b
	_, err := lw.bw.Write(b)
	return err
}

// transaction appends the header of p's set: the blank line before it,
// its date, flag, label and description, then its ids.
func (lw *ledgerWriter) transaction(b []byte, p *postings.MonthPosting) []byte {
	b = append(b, '\n')
	b = append(b, p.Competence...)
	eventAt := time.UnixMicro(p.EventUS).UTC().Format(time.RFC3339Nano)
	type meta struct{ key, value string }
	tags := []meta{{"kind", p.Kind}, {"event_at", eventAt}, {"charge_id", p.ChargeID}, {"refund_id", p.RefundID},
		{"partner", p.Partner}, {"idempotency_key", p.IdempotencyKey}}
	switch lw.f {
	case Hledger:
		b = append(b, " * ("...)
		b = strconv.AppendInt(b, p.SetID, 10)
		b = append(b, ") "...)
		b = lw.label(b, p, ";|", false)
		if p.Description != "" {
			b = append(b, " | "...)
			b = escapeText(b, p.Description, ";|", false)
		}
		b = append(b, "\n    ; posting_set_id: "...)
		b = strconv.AppendInt(b, p.SetID, 10)
		b = append(b, '\n')
		for _, t := range tags {
			if t.value != "" {
				b = append(b, "    ; "+t.key+": "...)
				b = escapeText(b, t.value, ",", false)
				b = append(b, '\n')
			}
		}
	case Beancount:
		b = append(b, " * \""...)
		b = lw.label(b, p, "", true)
		b = append(b, "\" \""...)
		b = escapeText(b, p.Description, "", true)
		b = append(b, "\"\n  posting_set_id: "...)
		b = strconv.AppendInt(b, p.SetID, 10)
		b = append(b, '\n')
		for _, t := range tags {
			if t.value != "" {
				b = append(b, "  "+t.key+": \""...)
				b = escapeText(b, t.value, "", true)
				b = append(b, "\"\n"...)
			}
		}
	}
	return b
}

// label appends what a reader of the register sees as the payee: the
// kind and the charge, refund and partner it is about.
func (lw *ledgerWriter) label(b []byte, p *postings.MonthPosting, reserved string, backslash bool) []byte {
	b = escapeText(b, p.Kind, reserved, backslash)
	for _, v := range []string{p.ChargeID, p.RefundID, p.Partner} {
		if v != "" {
			b = append(b, ' ')
			b = escapeText(b, v, reserved, backslash)
		}
	}
	return b
}

// appendPadded appends s and spaces to width (at least two more after s
// would be the caller's).
func appendPadded(b []byte, s string, width int) []byte {
	b = append(b, s...)
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return b
}

// appendRight appends s right-aligned in width.
func appendRight(b []byte, s string, width int) []byte {
	for i := len(s); i < width; i++ {
		b = append(b, ' ')
	}
	return append(b, s...)
}

// finish writes the header of an empty month and flushes.
func (lw *ledgerWriter) finish() error {
	if !lw.started {
		lw.header()
	}
	return lw.bw.Flush()
}
