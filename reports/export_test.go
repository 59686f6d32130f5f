package reports

// JournalCSVSQL is the journal export's query, which the benchmark runs
// through psql's COPY to compare.
const JournalCSVSQL = journalCSVSQL
