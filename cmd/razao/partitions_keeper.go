package main

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/razao/razao/periods"
)

// How often serve's keeper makes the months ahead partitioned, and how
// soon it tries again when they were busy (a reader of a DEFAULT
// partition, another replica making them).
const (
	partitionsEvery = 6 * time.Hour
	partitionsRetry = time.Minute
)

// partitionKeeper is serve's periods.Keeper with its metrics. Every
// replica runs one: ledger_ensure_month_partitions makes the calls take
// turns, and with nothing to make takes no lock.
type partitionKeeper struct {
	keeper *periods.Keeper
	runs   *prometheus.CounterVec
	tables prometheus.Counter
}

func newPartitionKeeper(db *sqlx.DB, now func() time.Time, log *slog.Logger) *partitionKeeper {
	k := &partitionKeeper{
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "razao_partition_keeper_runs_total",
			Help: "Runs of the keeper of the ledger's monthly partitions, by outcome: made (tables made), nothing (every partition existed), busy (a lock not had in time: tried again a minute later), failed.",
		}, []string{"outcome"}),
		tables: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "razao_partition_keeper_tables_made_total",
			Help: "Partitions of posting_sets and postings the keeper made.",
		}),
	}
	k.keeper = &periods.Keeper{DB: db, Log: log, Now: now, Every: partitionsEvery, Retry: partitionsRetry, Observe: k.observe}
	return k
}

func (k *partitionKeeper) observe(made int, err error) {
	switch {
	case errors.Is(err, periods.ErrPartitionsBusy):
		k.runs.WithLabelValues("busy").Inc()
	case err != nil:
		k.runs.WithLabelValues("failed").Inc()
	case made > 0:
		k.runs.WithLabelValues("made").Inc()
		k.tables.Add(float64(made))
	default:
		k.runs.WithLabelValues("nothing").Inc()
	}
}

// collectors are the keeper's metrics, for serve's registry.
func (k *partitionKeeper) collectors() []prometheus.Collector {
	return []prometheus.Collector{k.runs, k.tables}
}

func (k *partitionKeeper) run(ctx context.Context) { k.keeper.Run(ctx) }
