package razao

// Hooks for the tests of package razao_test.
var (
	// MigrateWith is Migrate with the migrations and function files given.
	MigrateWith = migrate
	// ParseFunction reads a function file's text as Functions does.
	ParseFunction = parseFunction
	// ApplyFunction applies one function file under the migrations' lock.
	ApplyFunction = applyFunction
)

// ParseContract reads a migration's "-- razao: contract NNNN" header.
var ParseContract = parseContract
