package main

import (
	"fmt"
	"strconv"
)

// allowRootEnv opts a development machine into serving as root, as
// allow_root: true does in the config file. An environment variable
// rather than a flag: the scripts that start an older release's binary
// beside this one (scripts/load/versus.sh) may set it for both, and an
// older binary ignores a variable where it would refuse an unknown flag.
const allowRootEnv = "RAZAO_ALLOW_ROOT"

// parseAllowRoot reads allow_root from the file and $RAZAO_ALLOW_ROOT:
// either one saying yes allows it. A value that is not a boolean is an
// error, not a no: RAZAO_ALLOW_ROOT=yes must not be silently ignored.
func parseAllowRoot(file bool, getenv func(string) string) (bool, error) {
	v := getenv(allowRootEnv)
	if v == "" {
		return file, nil
	}
	env, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("config: $%s %q: want 1 or 0 (true or false)", allowRootEnv, v)
	}
	return file || env, nil
}

// refuseRoot refuses to serve with effective uid 0 unless allowed: the
// service parses what the network sends, and a flaw in that as root is
// the machine's. The image runs as 65532 and the systemd unit as a
// dynamic user; neither sets the opt-in.
//
// "Root" is the effective uid this process sees, nothing more. Inside a
// user namespace that is the namespace's uid 0: `podman run --user 0`
// of a rootless podman is refused although it maps to an unprivileged
// user outside, and a process that is root only outside its namespace
// (mapped to a non-zero uid inside) is let through. The check cannot see
// beyond its namespace, and does not try: uid 0 inside one still owns
// everything the namespace holds (the image's files, its mounts).
func refuseRoot(euid int, allowed bool) error {
	if euid != 0 || allowed {
		return nil
	}
	return fmt.Errorf("refusing to serve as root (effective uid 0): run razao as an unprivileged user " +
		"(the image runs as 65532, deploy/razao.service as a dynamic user); " +
		"on a development machine only, allow it with allow_root: true in the config file or " + allowRootEnv + "=1")
}
