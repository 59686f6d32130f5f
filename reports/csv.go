package reports

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/accounts"
	"github.com/razao/razao/money"
	"github.com/razao/razao/periods"
	"github.com/razao/razao/postings"
)

// Dialect is a CSV flavour.
type Dialect int

// The CSV dialects.
const (
	// RFC4180: "," separator, "." decimal point, CRLF line ends, no BOM.
	RFC4180 Dialect = iota
	// Brazil: what Excel set to pt-BR opens as columns: ";" separator,
	// "," decimal comma, UTF-8 with a byte order mark, CRLF line ends; the
	// reports' headers in Portuguese, and times in Brasília time
	// (America/Sao_Paulo), RFC 3339 with their offset
	// (2026-08-31T22:30:00-03:00), where RFC 4180 files say UTC.
	Brazil

	// In both dialects, a text cell that a spreadsheet would read as a
	// formula (starting with = + - @, tab or CR: OWASP's CSV injection
	// list) is prefixed with an apostrophe. Text cells hold what PSPs and
	// users chose (charge, refund and partner ids, idempotency keys,
	// descriptions), and an RFC 4180 file is opened in a spreadsheet as
	// often as a Brazilian one. Numbers are written as numbers and never
	// guarded, so a negative amount stays -25.00.
)

// ParseDialect parses "rfc4180" (or "") and "br".
func ParseDialect(s string) (Dialect, error) {
	switch s {
	case "", "rfc4180":
		return RFC4180, nil
	case "br":
		return Brazil, nil
	}
	return 0, fmt.Errorf("%w: %q (want rfc4180 or br)", ErrUnknownDialect, s)
}

// String is the dialect's name as ParseDialect reads it.
func (d Dialect) String() string {
	if d == Brazil {
		return "br"
	}
	return "rfc4180"
}

// ContentType is the MIME type of the dialect's files.
func (d Dialect) ContentType() string { return "text/csv; charset=utf-8; header=present" }

// ExportKind names a CSV export.
type ExportKind string

// The CSV exports.
const (
	// ExportJournal: one row per posting of the month, in set then posting
	// order.
	ExportJournal ExportKind = "journal"
	// ExportTrialBalance: one row per trial balance line, then a TOTAL row
	// per currency.
	ExportTrialBalance ExportKind = "trial-balance"
	// ExportIncomeStatement: one row per income statement line.
	ExportIncomeStatement ExportKind = "income-statement"
)

// ParseExportKind parses journal, trial-balance and income-statement.
func ParseExportKind(s string) (ExportKind, error) {
	switch k := ExportKind(s); k {
	case ExportJournal, ExportTrialBalance, ExportIncomeStatement:
		return k, nil
	}
	return "", fmt.Errorf("%w: %q (want journal, trial-balance or income-statement)", ErrUnknownKind, s)
}

// FileName is the export's conventional file name, e.g.
// razao-journal-2026-08.csv, or razao-journal-2026-08-br.csv.
func FileName(kind ExportKind, m periods.Month, d Dialect) string {
	suffix := ""
	if d == Brazil {
		suffix = "-br"
	}
	return "razao-" + string(kind) + "-" + m.String() + suffix + ".csv"
}

// The columns of each export, in RFC 4180 files and, in Portuguese, in
// Brazilian ones (the cells are the same: codes such as sale or asset stay
// as the API spells them). Amounts appear twice: in reais with two
// decimals (the dialect's decimal separator) and in integer centavos.
var (
	journalColumns = []string{"posting_set_id", "kind", "competence", "event_at", "charge_id", "refund_id",
		"partner", "idempotency_key", "description", "posting_id", "account", "currency", "amount", "amount_centavos"}
	journalColumnsBR = []string{"Lançamento", "Tipo", "Competência", "Data e hora do evento", "Cobrança", "Devolução",
		"Parceiro", "Chave de idempotência", "Descrição", "Partida", "Conta", "Moeda", "Valor", "Valor em centavos"}
	trialBalanceColumns = []string{"month", "account", "type", "currency", "opening", "debits", "credits", "closing",
		"opening_centavos", "debits_centavos", "credits_centavos", "closing_centavos"}
	trialBalanceColumnsBR = []string{"Mês", "Conta", "Tipo", "Moeda", "Saldo inicial", "Débitos", "Créditos", "Saldo final",
		"Saldo inicial em centavos", "Débitos em centavos", "Créditos em centavos", "Saldo final em centavos"}
	incomeColumns   = []string{"month", "currency", "line", "count", "amount", "amount_centavos"}
	incomeColumnsBR = []string{"Mês", "Moeda", "Linha", "Quantidade", "Valor", "Valor em centavos"}
)

// columns are the header of an export in dialect d.
func columns(d Dialect, rfc, br []string) []string {
	if d == Brazil {
		return br
	}
	return rfc
}

// brasilia is the Brazilian dialect's time zone: Brasília time, as São
// Paulo keeps it (periods embeds the zone database, so it always loads).
var brasilia = func() *time.Location {
	loc, err := time.LoadLocation("America/Sao_Paulo")
	if err != nil {
		panic("reports: " + err.Error())
	}
	return loc
}()

// WriteCSV writes the export kind of month m to w in dialect d and returns
// the number of data rows (the header not counted). The bytes depend only
// on the ledger's data: the same month exports identically every time, and
// a closed month forever. The journal is streamed from the database row by
// row, so memory stays flat whatever the month's size.
//
// Invalid arguments (ErrUnknownKind, ErrUnknownDialect, ErrInvalidMonth) and
// a failing query are reported before anything is written, so a caller can
// still answer with an error status; an error after that means w holds a
// truncated file.
func WriteCSV(ctx context.Context, q sqlx.QueryerContext, s Sums, w io.Writer, kind ExportKind, m periods.Month, d Dialect) (int64, error) {
	if _, err := ParseExportKind(string(kind)); err != nil {
		return 0, err
	}
	if d != RFC4180 && d != Brazil {
		return 0, fmt.Errorf("%w: %d", ErrUnknownDialect, int(d))
	}
	if err := m.Check(); err != nil {
		return 0, err
	}
	var n int64
	err := read(ctx, q, func(q sqlx.QueryerContext) error {
		var err error
		switch kind {
		case ExportTrialBalance:
			var tb TrialBalanceReport
			if tb, err = trialBalance(ctx, q, s, m); err == nil {
				n, err = writeTrialBalance(NewCSVWriter(w, d), d, tb)
			}
		case ExportIncomeStatement:
			var inc Income
			if inc, err = incomeStatement(ctx, q, s, m); err == nil {
				n, err = writeIncome(NewCSVWriter(w, d), d, inc)
			}
		default:
			n, err = writeJournal(ctx, q, w, m, d)
		}
		return err
	})
	return n, err
}

func writeJournal(ctx context.Context, q sqlx.QueryerContext, w io.Writer, m periods.Month, d Dialect) (int64, error) {
	codes, err := accounts.Codes(ctx, q)
	if err != nil {
		return 0, fmt.Errorf("journal csv %s: %w", m, err)
	}
	c := NewCSVWriter(w, d)
	c.Header(columns(d, journalColumns, journalColumnsBR))
	var n int64
	err = postings.EachMonthPosting(ctx, q, m, func(p *postings.MonthPosting) error {
		c.Int(p.SetID)
		c.Text(p.Kind)
		c.Text(p.Competence)
		c.Time(p.EventUS)
		c.Text(p.ChargeID)
		c.Text(p.RefundID)
		c.Text(p.Partner)
		c.Text(p.IdempotencyKey)
		c.Text(p.Description)
		c.Int(p.PostingID)
		c.Text(codes[p.AccountID])
		c.Text(p.Currency)
		c.Reais(p.Amount)
		c.Int(p.Amount)
		if err := c.EndLine(); err != nil {
			return fmt.Errorf("write: %w", err)
		}
		n++
		return nil
	})
	if err != nil {
		return n, fmt.Errorf("journal csv %s: %w", m, err)
	}
	if err := c.Flush(); err != nil {
		return n, fmt.Errorf("journal csv %s: write: %w", m, err)
	}
	return n, nil
}

func writeTrialBalance(c *CSVWriter, d Dialect, tb TrialBalanceReport) (int64, error) {
	c.Header(columns(d, trialBalanceColumns, trialBalanceColumnsBR))
	row := func(account, typ, currency string, opening, debits, credits, closing int64) {
		c.Text(tb.Month)
		c.Text(account)
		c.Text(typ)
		c.Text(currency)
		for _, v := range []int64{opening, debits, credits, closing} {
			c.Reais(v)
		}
		for _, v := range []int64{opening, debits, credits, closing} {
			c.Int(v)
		}
		c.EndLine()
	}
	for _, l := range tb.Lines {
		row(l.Account, l.Type, l.Currency, l.Opening, l.Debits, l.Credits, l.Closing)
	}
	// Account codes are lower case, so TOTAL cannot be one.
	for _, t := range tb.Totals {
		row("TOTAL", "", t.Currency, t.Opening, t.Debits, t.Credits, t.Closing)
	}
	if err := c.Flush(); err != nil {
		return 0, fmt.Errorf("trial balance csv %s: write: %w", tb.Month, err)
	}
	return int64(len(tb.Lines) + len(tb.Totals)), nil
}

// csvAlways are the income lines the CSV has had from the start, exported
// even at 0. Every later line (a Pix's interest, fines, rebates and
// discounts, the returns made under the MED, any added since) is a line
// of its own only in the months that have it, so that a month exported
// before the line existed is exported again byte for byte.
var csvAlways = map[string]bool{"commission": true, "psp_fees": true}

func writeIncome(c *CSVWriter, d Dialect, inc Income) (int64, error) {
	c.Header(columns(d, incomeColumns, incomeColumnsBR))
	type line struct {
		name   string
		count  int64
		counts bool
		amount int64
	}
	lines := []line{
		{"sales", inc.SalesCount, true, inc.Sales},
		{"refunds", inc.RefundsCount, true, inc.Refunds},
		{"net_revenue", 0, false, inc.NetRevenue},
	}
	fields := reflect.ValueOf(inc)
	for _, l := range periods.IncomeLines {
		amount := fields.Field(incomeField[l.Name]).Int()
		if amount != 0 || csvAlways[l.Name] {
			lines = append(lines, line{l.Name, 0, false, amount})
		}
	}
	lines = append(lines, line{"other", 0, false, inc.Other}, line{"net_income", 0, false, inc.NetIncome})
	for _, l := range lines {
		c.Text(inc.Month)
		c.Text(inc.Currency)
		c.Text(l.name)
		if l.counts {
			c.Int(l.count)
		} else {
			c.Text("")
		}
		c.Reais(l.amount)
		c.Int(l.amount)
		c.EndLine()
	}
	if err := c.Flush(); err != nil {
		return 0, fmt.Errorf("income statement csv %s: write: %w", inc.Month, err)
	}
	return int64(len(lines)), nil
}

// CSVWriter writes the CSV files razao exports (the month's reports, a
// reconciliation run's lines) in a dialect: a cell at a time (Text, Int,
// Reais, Time), each line ended by EndLine, the file by Flush. It builds
// each line in a reused buffer and writes it whole: no allocation per
// field, and quoting by the one rule both dialects share (a text field
// holding ",", ";", a tab, a quote, CR or LF is quoted, its quotes
// doubled), with the formula guard on text cells (see Dialect).
type CSVWriter struct {
	bw       *bufio.Writer
	sep      byte
	decimal  rune
	bom      bool
	loc      *time.Location
	line     []byte
	inLine   bool
	writeErr error
}

// NewCSVWriter writes to w in dialect d, buffered: nothing reaches w
// before 64 KiB or Flush.
func NewCSVWriter(w io.Writer, d Dialect) *CSVWriter {
	c := &CSVWriter{bw: bufio.NewWriterSize(w, 64<<10), sep: ',', decimal: '.', loc: time.UTC, line: make([]byte, 0, 512)}
	if d == Brazil {
		c.sep, c.decimal, c.bom, c.loc = ';', ',', true, brasilia
	}
	return c
}

// Header writes the header line (after the dialect's byte order mark).
func (c *CSVWriter) Header(cols []string) {
	if c.bom {
		c.line = append(c.line, 0xEF, 0xBB, 0xBF)
	}
	for _, col := range cols {
		c.Text(col)
	}
	c.EndLine()
}

func (c *CSVWriter) next() {
	if c.inLine {
		c.line = append(c.line, c.sep)
	}
	c.inLine = true
}

// Text writes a text cell, guarded against formulas and quoted when it
// holds either dialect's separator; "" is an empty cell.
func (c *CSVWriter) Text(s string) {
	c.next()
	if s != "" {
		switch s[0] {
		case '=', '+', '-', '@', '\t', '\r':
			s = "'" + s
		}
	}
	// Quoted in both dialects whenever the cell holds either dialect's
	// separator, a tab, CR, LF or a quote, not only this file's separator:
	// a refund id "rf1;=cmd|..." left bare in the RFC 4180 file becomes a
	// cell starting with "=" in a spreadsheet that splits on ";" (Excel set
	// to pt-BR), and "," does the same to the Brazilian file. A quoted cell
	// is one cell whatever separator the reader splits on, so the formula
	// guard above, on the cell's start, is enough: no part after a
	// separator ever starts a cell of its own.
	quote := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', ';', '\t', '"', '\r', '\n':
			quote = true
		}
		if quote {
			break
		}
	}
	if !quote {
		c.line = append(c.line, s...)
		return
	}
	c.line = append(c.line, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			c.line = append(c.line, '"')
		}
		c.line = append(c.line, s[i])
	}
	c.line = append(c.line, '"')
}

// Int writes an integer cell.
func (c *CSVWriter) Int(v int64) {
	c.next()
	c.line = strconv.AppendInt(c.line, v, 10)
}

// Reais writes centavos as reais with two decimals; money.FormatReais
// is the one rendering of amounts in the code base.
func (c *CSVWriter) Reais(v int64) {
	c.next()
	c.line = append(c.line, money.FormatReais(v, c.decimal)...)
}

// Time writes epoch microseconds as RFC 3339, with as many fraction
// digits as needed: in UTC, or in the Brazilian dialect in Brasília time
// with its offset.
func (c *CSVWriter) Time(us int64) {
	c.next()
	c.line = time.UnixMicro(us).In(c.loc).AppendFormat(c.line, time.RFC3339Nano)
}

// EndLine ends the line and writes it, returning the first write error.
func (c *CSVWriter) EndLine() error {
	c.line = append(c.line, '\r', '\n')
	if c.writeErr == nil {
		_, c.writeErr = c.bw.Write(c.line)
	}
	c.line, c.inLine = c.line[:0], false
	return c.writeErr
}

// Flush writes what is buffered, or returns the first write error.
func (c *CSVWriter) Flush() error {
	if c.writeErr != nil {
		return c.writeErr
	}
	return c.bw.Flush()
}
