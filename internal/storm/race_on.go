//go:build race

package storm

// RaceEnabled reports whether this binary was built with -race. A test
// built with -race builds the replicas with -race too: the race archives
// are already in the build cache, and races in razao under a multi-replica
// storm land in the replica logs, which Check reads.
const RaceEnabled = true
