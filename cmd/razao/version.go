package main

import (
	"context"
	"fmt"
	"io"
	"runtime/debug"
)

// cmdVersion prints what the binary was built from, as Go recorded it:
// the module version (a tag, or "(devel)" for a local build), the commit,
// its time, whether the work tree had uncommitted changes, and the Go
// version. Fields Go did not record (go run, go test) say "unknown".
func cmdVersion(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("version", stderr)
	if err := fs.Parse(args); err != nil {
		return err
	}
	fmt.Fprint(stdout, versionText(debug.ReadBuildInfo()))
	return nil
}

func versionText(info *debug.BuildInfo, ok bool) string {
	if !ok {
		return "razao: no build information in this binary\n"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	or := func(v string) string {
		if v == "" {
			return "unknown"
		}
		return v
	}
	modified := settings["vcs.modified"]
	if modified == "true" {
		modified = "true (uncommitted changes in the build)"
	}
	return fmt.Sprintf("razao %s\n  module   %s\n  commit   %s\n  time     %s\n  modified %s\n  go       %s\n",
		or(info.Main.Version), or(info.Main.Path), or(settings["vcs.revision"]), or(settings["vcs.time"]), or(modified), info.GoVersion)
}
