package archive

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Every statement over the archives table (sql/0052), and the rule's
// picks (rule.go), which read the kinds' tables and lock the rows picked;
// the reads of the rows and their purges are the owners' (inbox, events,
// reconcile, outgoing).

// Record is one archive file, as the archives table records it.
type Record struct {
	ID         int64     `db:"id" json:"id"`
	Kind       Kind      `db:"kind" json:"kind"`
	Month      string    `db:"month" json:"month"`
	FileName   string    `db:"file_name" json:"file_name"`
	SHA256     string    `db:"sha256" json:"sha256"`
	Rows       int64     `db:"rows" json:"rows"`
	Bytes      int64     `db:"bytes" json:"bytes"`
	ArchivedAt time.Time `db:"archived_at" json:"archived_at"`
}

const recordColumns = `id, kind, to_char(month, 'YYYY-MM') AS month, file_name, sha256, rows, bytes, archived_at`

// List returns every archive file recorded, by kind, month and id.
func List(ctx context.Context, q sqlx.QueryerContext) ([]Record, error) {
	var rs []Record
	if err := sqlx.SelectContext(ctx, q, &rs, `SELECT `+recordColumns+` FROM archives ORDER BY kind, month, id`); err != nil {
		return nil, fmt.Errorf("archive: list: %w", err)
	}
	return rs, nil
}

// recorded returns which of names the archives table records.
func recorded(ctx context.Context, q sqlx.QueryerContext, names []string) (map[string]bool, error) {
	var found []string
	if err := sqlx.SelectContext(ctx, q, &found, `SELECT file_name FROM archives WHERE file_name = ANY($1)`, pq.Array(names)); err != nil {
		return nil, fmt.Errorf("archive: read records: %w", err)
	}
	m := make(map[string]bool, len(found))
	for _, n := range found {
		m[n] = true
	}
	return m, nil
}

func insertRecord(ctx context.Context, tx sqlx.ExecerContext, r Record) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO archives (id, kind, month, file_name, sha256, rows, bytes, archived_at)
		VALUES ($1, $2, ($3 || '-01')::date, $4, $5, $6, $7, $8)`, r.ID, r.Kind, r.Month, r.FileName, r.SHA256, r.Rows, r.Bytes, r.ArchivedAt)
	if err != nil {
		return fmt.Errorf("archive: record %s: %w", r.FileName, err)
	}
	return nil
}

func nextID(ctx context.Context, tx sqlx.QueryerContext) (int64, error) {
	var id int64
	err := sqlx.GetContext(ctx, tx, &id, `SELECT nextval(pg_get_serial_sequence('archives', 'id'))`)
	return id, err
}

// lastClosed reads the last closed month, nil with none. It takes no
// lock: a month closed after this read only lets a later run take more.
func lastClosed(ctx context.Context, tx sqlx.QueryerContext) (*time.Time, error) {
	var m sql.NullTime
	if err := sqlx.GetContext(ctx, tx, &m, `SELECT max(month) FROM closed_periods`); err != nil {
		return nil, fmt.Errorf("archive: read closed months: %w", err)
	}
	if !m.Valid {
		return nil, nil
	}
	return &m.Time, nil
}

// oldestMonth is the month (YYYY-MM, in tz) of the kind's oldest row
// that may go, "" with none.
func oldestMonth(ctx context.Context, tx sqlx.QueryerContext, r rule, horizon time.Time, tz string) (string, error) {
	var months []string
	q := `SELECT to_char(` + r.at + ` AT TIME ZONE $2, 'YYYY-MM') FROM ` + r.from + ` WHERE ` + r.eligible +
		` ORDER BY ` + r.order + ` LIMIT 1`
	if err := sqlx.SelectContext(ctx, tx, &months, q, horizon, tz); err != nil {
		return "", fmt.Errorf("archive: find the oldest month: %w", err)
	}
	if len(months) == 0 {
		return "", nil
	}
	return months[0], nil
}

// picked is one key picked, with the rows it weighs.
type picked struct {
	ID     int64 `db:"id"`
	Weight int64 `db:"weight"`
}

// pick locks (unless the rule says otherwise) up to limit keys of the kind that may go, of the month
// [from, to), oldest first, and keeps the first whose weights sum to at
// most limit (at least one).
func pick(ctx context.Context, tx sqlx.QueryerContext, r rule, horizon, from, to time.Time, limit int) ([]int64, error) {
	q := `SELECT ` + r.id + ` AS id, ` + r.weight + ` AS weight FROM ` + r.from + ` WHERE ` + r.eligible +
		` AND ` + r.at + ` >= $2 AND ` + r.at + ` < $3 ORDER BY ` + r.order + ` LIMIT $4`
	if !r.unlocked {
		q += ` FOR UPDATE OF ` + r.from[strings.LastIndexByte(r.from, ' ')+1:]
	}
	var ps []picked
	if err := sqlx.SelectContext(ctx, tx, &ps, q, horizon, from, to, limit); err != nil {
		return nil, fmt.Errorf("archive: pick rows: %w", err)
	}
	var ids []int64
	var sum int64
	for _, p := range ps {
		sum += p.Weight
		if len(ids) > 0 && sum > int64(limit) {
			break
		}
		ids = append(ids, p.ID)
	}
	return ids, nil
}
