package reports

// LiveOwnLines is liveOwnLines for the benchmarks, which live in
// reports_test so that they can close months through package periods.
var LiveOwnLines = liveOwnLines

// JournalCSVSQL is the journal export's query, which the benchmark runs
// through psql's COPY to compare.
const JournalCSVSQL = journalCSVSQL
