package reports

import (
	"context"
	"net/http"

	"github.com/jmoiron/sqlx"

	"github.com/razao/razao/periods"
)

// ServeCSV writes one month's export to w as a download, its headers set
// on the first byte: an error found before any byte is written (a month
// beyond the ledger's data, an overflow) leaves w untouched for the caller
// to answer as it answers errors (started is false). An error after that
// is mid-stream, when the status is gone: the caller must cut the
// connection (panic(http.ErrAbortHandler)) so that the client sees a
// broken download rather than a short file that looks whole.
func ServeCSV(ctx context.Context, q sqlx.QueryerContext, s Sums, w http.ResponseWriter, kind ExportKind, m periods.Month, d Dialect) (started bool, err error) {
	out := &lazyHeader{w: w, header: func() {
		w.Header().Set("Content-Type", d.ContentType())
		w.Header().Set("Content-Disposition", `attachment; filename="`+FileName(kind, m, d)+`"`)
		w.Header().Set("Cache-Control", "no-store")
	}}
	_, err = WriteCSV(ctx, q, s, out, kind, m, d)
	return out.started, err
}

// lazyHeader sets the download's headers on the first write.
type lazyHeader struct {
	w       http.ResponseWriter
	header  func()
	started bool
}

func (l *lazyHeader) Write(p []byte) (int, error) {
	if !l.started {
		l.started = true
		l.header()
	}
	return l.w.Write(p)
}
