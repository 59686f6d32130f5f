package tracing

import (
	"context"
	"database/sql/driver"

	"github.com/XSAM/otelsql"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// SQLOptions are the options of otelsql's driver wrapper: a span per
// statement, transaction begin, commit and rollback, carrying the
// statement's text (db.query.text) and never its arguments, which hold
// amounts and ids. A statement gets a span only under a span of its
// context (a request's or a delivery's): the background loops' polling
// makes none. Rows, session resets and connects get none either.
func SQLOptions(tp trace.TracerProvider) []otelsql.Option {
	return []otelsql.Option{
		otelsql.WithTracerProvider(tp),
		otelsql.WithAttributes(semconv.DBSystemNamePostgreSQL),
		otelsql.WithSpanOptions(otelsql.SpanOptions{
			OmitConnResetSession: true,
			OmitRows:             true,
			OmitConnectorConnect: true,
			SpanFilter: func(ctx context.Context, _ otelsql.Method, _ string, _ []driver.NamedValue) bool {
				return trace.SpanContextFromContext(ctx).IsValid()
			},
		}),
	}
}
