package exports_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/razao/razao/exports"
)

// An export creates its file or replaces a regular one, and nothing else:
// run as root with -out /dev/stdout, a rename would replace the device's
// link in /dev with the CSV. Whatever is not a regular file under either name
// it writes (the file or its .sha256) is refused before anything is
// written, and left as it was.
func TestWriteAtomicRefusesWhatIsNotARegularFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		at   string // which of the two names is taken
		make func(path string) error
	}{
		{"link to /dev/null", "f.csv", func(p string) error { return os.Symlink(os.DevNull, p) }},
		{"named pipe", "f.csv", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
		{"directory", "f.csv", func(p string) error { return os.Mkdir(p, 0o700) }},
		{"link to a regular file", "f.csv", func(p string) error {
			if err := os.WriteFile(p+".target", []byte("kept"), 0o600); err != nil {
				return err
			}
			return os.Symlink(p+".target", p)
		}},
		{"named pipe as the checksum", "f.csv.sha256", func(p string) error { return syscall.Mkfifo(p, 0o600) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			taken := filepath.Join(dir, tc.at)
			if err := tc.make(taken); err != nil {
				t.Fatal(err)
			}
			before := listing(t, dir)
			filled := false
			_, err := exports.WriteAtomic(dir, "f.csv", func(w io.Writer) (int64, error) {
				filled = true
				_, err := io.WriteString(w, "a,b\n")
				return 1, err
			})
			if !errors.Is(err, exports.ErrNotRegularFile) {
				t.Fatalf("export over %s: %v, want ErrNotRegularFile", tc.name, err)
			}
			t.Log(err)
			if filled {
				t.Error("the export was written before the refusal")
			}
			if after := listing(t, dir); !equalListings(before, after) {
				t.Fatalf("the directory changed: %v, was %v", after, before)
			}
		})
	}
}

// A new name, or a regular file already there, is written as before.
func TestWriteAtomicCreatesOrReplacesARegularFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "old.csv"), []byte("yesterday's"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"new.csv", "old.csv"} {
		if _, err := exports.WriteAtomic(dir, name, func(w io.Writer) (int64, error) {
			_, err := io.WriteString(w, "a,b\n")
			return 1, err
		}); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if b, err := os.ReadFile(filepath.Join(dir, name)); err != nil || string(b) != "a,b\n" {
			t.Fatalf("%s holds %q, %v", name, b, err)
		}
	}
}

// listing is each entry of dir with its type, and a link's target.
func listing(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, e := range entries {
		kind := e.Type().String()
		if e.Type()&fs.ModeSymlink != 0 {
			to, err := os.Readlink(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			kind += " -> " + to
		}
		m[e.Name()] = kind
	}
	return m
}

func equalListings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
