//go:build !race

package storm

// RaceEnabled reports whether this binary was built with -race.
const RaceEnabled = false
