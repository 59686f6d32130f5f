// Package exports writes the finance CSV files: atomically (temp file,
// fsync, rename), with a .sha256 beside each, and on a cron schedule that
// several replicas share through the export_runs table, so each slot runs
// once and its history stays in the database.
package exports

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

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
// is written the same way, after the file itself.
func WriteAtomic(dir, name string, fill func(io.Writer) (rows int64, err error)) (Written, error) {
	if name == "" || name != filepath.Base(name) || strings.HasPrefix(name, ".") {
		return Written{}, fmt.Errorf("export file name %q must be a plain file name", name)
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
