package monthsums_test

import (
	"time"

	"github.com/razao/razao/periods"
)

var (
	jul2026 = periods.Month{Year: 2026, Month: time.July}
	aug2026 = periods.Month{Year: 2026, Month: time.August}
	sep2026 = periods.Month{Year: 2026, Month: time.September}
	oct2026 = periods.Month{Year: 2026, Month: time.October}
)

// afterSeptember is a clock reading when August and September are over in
// São Paulo.
var afterSeptember = time.Date(2026, 10, 2, 12, 0, 0, 0, time.UTC)
