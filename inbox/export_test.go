package inbox

// ClaimDueSQL is the workers' claim statement, for its plan's test.
const ClaimDueSQL = claimDueSQL
