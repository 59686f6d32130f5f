package pgtest

import (
	"fmt"
	mrand "math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
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

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
// It is drawn below the kernel's ephemeral range, so that while a server
// is down (a killed replica, a stopped cluster) no outgoing connection can
// take its port as a source port and keep it from listening again.
func FreePort() (int, error) {
	lo, hi := 20000, 32767
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var first, last int
		if _, err := fmt.Sscan(string(b), &first, &last); err == nil && first > 2048 {
			hi = first - 1
			lo = max(1024, min(lo, hi-4000))
		}
	}
	for range 100 {
		port := lo + mrand.IntN(hi-lo+1)
		ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err == nil {
			ln.Close()
			return port, nil
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// Cluster is a throwaway PostgreSQL cluster of scripts/localpg.sh, for a
// test that stops, restarts or restores into a server: never the shared
// one.
type Cluster struct {
	Dir  string // its data directory
	Port int
	URL  string // its maintenance database
}

// NewCluster starts a Cluster under a directory the cluster's owner can
// traverse when the tests run as root; it is stopped and removed when t
// ends.
func NewCluster(t testing.TB) *Cluster {
	t.Helper()
	root, err := os.MkdirTemp("", "razao-cluster-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(root, 0o755)
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: filepath.Join(root, "data"), Port: port}
	t.Cleanup(func() { StopCluster(c.Dir, c.Port); os.RemoveAll(root) })
	if c.URL, err = StartCluster(c.Dir, port); err != nil {
		t.Fatal(err)
	}
	return c
}

// RestoreDump copies the database at srcURL into the cluster's
// maintenance database with pg_dump and psql: a logical restore.
func (c *Cluster) RestoreDump(t testing.TB, srcURL string) {
	t.Helper()
	dump := exec.Command("bash", "-c", fmt.Sprintf("set -o pipefail; pg_dump --no-owner --no-privileges '%s' | psql -q -v ON_ERROR_STOP=1 '%s'", srcURL, c.URL))
	if out, err := dump.CombinedOutput(); err != nil {
		t.Fatalf("dump and restore: %v: %s", err, out)
	}
}
