// Package exports writes the finance CSV files: atomically (temp file,
// fsync, rename), with a .sha256 beside each, and on a cron schedule that
// several replicas share through the export_runs table, so each slot runs
// once and its history stays in the database.
package exports

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ErrNotRegularFile refuses an export's target that exists and is not a
// regular file: a symbolic link (/dev/stdout is one), a device (/dev/null),
// a named pipe, a directory or a socket. The export's rename would replace
// it with the file, which, run as root on /dev/stdout, removed the device
// node from /dev.
var ErrNotRegularFile = errors.New("not a regular file")

// Written describes a file that reached its final name.
type Written struct {
	Path   string
	SHA256 string
	Bytes  int64
	Rows   int64
}

// WriteAtomic creates dir/name with what fill writes, never leaving a
// partial file under that name: fill writes into a temporary file in the
// same directory, which is synced and renamed over name only when fill
// succeeded; the directory is synced after, so the rename survives a
// crash. A sibling name.sha256 ("<hex>  <name>\n", as sha256sum prints)
// is written the same way, after the file itself. Either name, if it
// exists, must be a regular file (ErrNotRegularFile): both are checked
// before anything is written.
func WriteAtomic(dir, name string, fill func(io.Writer) (rows int64, err error)) (Written, error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return Written{}, fmt.Errorf("export file name %q must be a plain file name", name)
	}
	for _, n := range []string{name, name + ".sha256"} {
		if err := checkTarget(dir, n); err != nil {
			return Written{}, err
		}
	}
	sum := sha256.New()
	var rows int64
	n, err := writeFile(dir, name, func(w io.Writer) error {
		var err error
		rows, err = fill(io.MultiWriter(w, sum))
		return err
	})
	if err != nil {
		return Written{}, err
	}
	digest := hex.EncodeToString(sum.Sum(nil))
	_, err = writeFile(dir, name+".sha256", func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "%s  %s\n", digest, name)
		return err
	})
	if err != nil {
		return Written{}, err
	}
	return Written{Path: filepath.Join(dir, name), SHA256: digest, Bytes: n, Rows: rows}, nil
}

// WriteStream writes what fill writes to w, a stream such as standard
// output that cannot be renamed into place: no temporary file and no
// .sha256 beside it, but the same digest, size and rows as WriteAtomic
// reports. Path is "-".
func WriteStream(w io.Writer, fill func(io.Writer) (rows int64, err error)) (Written, error) {
	sum := sha256.New()
	cw := &countingWriter{w: w}
	rows, err := fill(io.MultiWriter(cw, sum))
	if err != nil {
		return Written{}, fmt.Errorf("export to standard output: write: %w", err)
	}
	return Written{Path: "-", SHA256: hex.EncodeToString(sum.Sum(nil)), Bytes: cw.n, Rows: rows}, nil
}

// checkTarget refuses dir/name unless it does not exist or is a regular
// file (never followed: a link is refused whatever it points to, since the
// rename would replace the link, not its target).
func checkTarget(dir, name string) error {
	path := filepath.Join(dir, name)
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("export %s: %w", path, err)
	case !fi.Mode().IsRegular():
		return fmt.Errorf("export %s: %w (it is %s): an export replaces a regular file or creates a new one", path, ErrNotRegularFile, fileType(fi.Mode()))
	}
	return nil
}

// fileType names a mode's type for a person.
func fileType(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "of another kind"
}

// countingWriter counts what passes through.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func writeFile(dir, name string, fill func(io.Writer) error) (n int64, err error) {
	tmp, err := os.CreateTemp(dir, "."+name+".*.tmp")
	if err != nil {
		return 0, fmt.Errorf("export %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	cw := &countingWriter{w: tmp}
	if err := fill(cw); err != nil {
		return 0, fmt.Errorf("export %s: write: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return 0, fmt.Errorf("export %s: sync: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return 0, fmt.Errorf("export %s: close: %w", name, err)
	}
	if err := os.Chmod(tmp.Name(), 0o640); err != nil {
		return 0, fmt.Errorf("export %s: %w", name, err)
	}
	// Again: the name may have been taken while fill wrote.
	if err := checkTarget(dir, name); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return 0, fmt.Errorf("export %s: rename: %w", name, err)
	}
	return cw.n, syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
