package main

import "runtime/debug"

// buildVersion is the module version Go recorded in the binary (a tag, or
// "(devel)"), the service.version of its spans.
func buildVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" {
		return info.Main.Version
	}
	return "unknown"
}
