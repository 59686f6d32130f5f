package pgtest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
)

// ServerTool finds a PostgreSQL server tool (pg_resetwal, pg_ctl...),
// which Debian keeps off PATH: in pg_config's bindir, else the newest
// /usr/lib/postgresql/*/bin, else on PATH.
func ServerTool(name string) (string, error) {
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), name)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	sort.Strings(found)
	if len(found) > 0 {
		return found[len(found)-1], nil
	}
	return exec.LookPath(name)
}

// AsOwner runs a PostgreSQL tool as the user that owns the cluster's data
// directory dir: root may not run the server's side of a backup, a
// restore or pg_resetwal, and a cluster of scripts/localpg.sh is owned by
// an unprivileged user when the tests run as root.
func AsOwner(dir string, args ...string) error {
	var st syscall.Stat_t
	if err := syscall.Stat(dir, &st); err != nil {
		return err
	}
	cmd := exec.Command(args[0], args[1:]...)
	if os.Geteuid() == 0 && st.Uid != 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: st.Uid, Gid: st.Gid}}
	}
	cmd.Dir = "/"
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return nil
}
