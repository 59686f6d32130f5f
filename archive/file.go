package archive

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"time"
)

// An archive file is gzip-compressed JSON Lines: a header line, one line
// per archived row (as the table's owner wrote it), and a trailer line
// with the row count and the SHA-256 of every line before it. gzip's own
// CRC catches a flipped or missing byte of the compressed stream; the
// trailer catches a file cut at a line's end or rows dropped or added;
// the SHA-256 of the whole file, kept in the archives table, ties the
// file to its record.

// formatName and formatVersion are the header's first two fields.
const (
	formatName    = "razao-archive"
	formatVersion = 1
)

// maxLine bounds one line read back (a kept statement file's chunk of
// 1 MB is 1.4 MB in base64; an inbox body is at most its endpoint's
// max_body): a hostile file cannot make verify hold more.
const maxLine = 64 << 20

// Header is an archive file's first line.
type Header struct {
	Format    string    `json:"format"`
	Version   int       `json:"version"`
	Kind      Kind      `json:"kind"`
	Month     string    `json:"month"` // YYYY-MM
	ArchiveID int64     `json:"archive_id"`
	Database  string    `json:"database"`
	CreatedAt time.Time `json:"created_at"`
}

// trailer is an archive file's last line.
type trailer struct {
	Trailer struct {
		Rows   int64  `json:"rows"`
		SHA256 string `json:"sha256"` // of every line before the trailer, newlines included
	} `json:"trailer"`
}

// Manifest is what Verify proved of a file.
type Manifest struct {
	Header Header
	Rows   int64
	// SHA256 is the whole file's, as the archives table records it.
	SHA256 string
	Bytes  int64
}

// fileWriter writes one archive file under a temporary name, and gives
// it its name only once it is whole and on disk.
type fileWriter struct {
	dir, name string
	f         *os.File
	file      hash.Hash // of the compressed bytes
	content   hash.Hash // of the lines before the trailer
	gz        *gzip.Writer
	buf       *bufio.Writer
	rows      int64
	bytes     int64
}

// createFile starts the archive file name in dir with its header.
func createFile(dir, name string, h Header) (*fileWriter, error) {
	f, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("archive: create %s: %w", name, err)
	}
	w := &fileWriter{dir: dir, name: name, f: f, file: sha256.New(), content: sha256.New()}
	w.buf = bufio.NewWriterSize(io.MultiWriter(f, w.file, countWriter{&w.bytes}), 1<<16)
	w.gz = gzip.NewWriter(w.buf)
	h.Format, h.Version = formatName, formatVersion
	line, err := json.Marshal(h)
	if err != nil {
		w.abort()
		return nil, fmt.Errorf("archive: header: %w", err)
	}
	if err := w.line(line); err != nil {
		w.abort()
		return nil, err
	}
	return w, nil
}

// record appends one row, a JSON object on one line.
func (w *fileWriter) record(row []byte) error {
	if bytes.IndexByte(row, '\n') >= 0 || !json.Valid(row) {
		return fmt.Errorf("archive: %s: a row is not one line of JSON", w.name)
	}
	w.rows++
	return w.line(row)
}

func (w *fileWriter) line(b []byte) error {
	w.content.Write(b)
	w.content.Write([]byte{'\n'})
	if _, err := w.gz.Write(b); err != nil {
		return fmt.Errorf("archive: write %s: %w", w.name, err)
	}
	if _, err := w.gz.Write([]byte{'\n'}); err != nil {
		return fmt.Errorf("archive: write %s: %w", w.name, err)
	}
	return nil
}

// commit writes the trailer, makes the file durable and gives it its
// name, which no other file may hold (a link, not a rename, so an
// existing file is never replaced), and returns the file's SHA-256.
func (w *fileWriter) commit() (string, error) {
	var t trailer
	t.Trailer.Rows, t.Trailer.SHA256 = w.rows, hex.EncodeToString(w.content.Sum(nil))
	line, _ := json.Marshal(t)
	if _, err := w.gz.Write(append(line, '\n')); err != nil {
		w.abort()
		return "", fmt.Errorf("archive: write %s: %w", w.name, err)
	}
	err := errors.Join(w.gz.Close(), w.buf.Flush(), w.f.Sync())
	if cerr := w.f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(w.f.Name(), filepath.Join(w.dir, w.name))
	}
	os.Remove(w.f.Name())
	if err == nil {
		err = syncDir(w.dir)
	}
	if err != nil {
		return "", fmt.Errorf("archive: write %s: %w", w.name, err)
	}
	return hex.EncodeToString(w.file.Sum(nil)), nil
}

// abort drops the temporary file.
func (w *fileWriter) abort() {
	w.f.Close()
	os.Remove(w.f.Name())
}

// syncDir makes a name written in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

type countWriter struct{ n *int64 }

func (c countWriter) Write(p []byte) (int, error) { *c.n += int64(len(p)); return len(p), nil }

// Verify reads the archive file at path to its end and proves it whole:
// gzip's checksums hold, the header is an archive's, every row is one
// line of JSON, and the trailer is the last line, with the count of the
// rows before it and their SHA-256.
func Verify(path string) (Manifest, error) {
	f, err := os.Open(path)
	if err != nil {
		return Manifest{}, fmt.Errorf("archive: %w", err)
	}
	defer f.Close()
	m, err := verifyStream(f)
	if err != nil {
		return m, fmt.Errorf("archive: %s: %w", filepath.Base(path), err)
	}
	return m, nil
}

func verifyStream(r io.Reader) (Manifest, error) {
	var m Manifest
	file := sha256.New()
	counted := io.TeeReader(r, io.MultiWriter(file, countWriter{&m.Bytes}))
	gz, err := gzip.NewReader(counted)
	if err != nil {
		return m, fmt.Errorf("not gzip: %w", err)
	}
	lines := bufio.NewReaderSize(gz, 1<<16)
	content := sha256.New()
	first, err := readLine(lines)
	if err != nil {
		return m, fmt.Errorf("header: %w", err)
	}
	if err := json.Unmarshal(first, &m.Header); err != nil || m.Header.Format != formatName || m.Header.Version != formatVersion {
		return m, errors.New("the first line is not a razao archive's header")
	}
	content.Write(first)
	for {
		line, err := readLine(lines)
		if err != nil {
			return m, fmt.Errorf("after %d rows: %w", m.Rows, err)
		}
		var t trailer
		if json.Unmarshal(line, &t) == nil && t.Trailer.SHA256 != "" {
			if err := checkEnd(lines, counted); err != nil {
				return m, err
			}
			return m, checkTrailer(t, m.Rows, hex.EncodeToString(content.Sum(nil)), &m, file)
		}
		if !json.Valid(line) {
			return m, fmt.Errorf("row %d is not JSON", m.Rows+1)
		}
		content.Write(line)
		m.Rows++
	}
}

// readLine reads one line, its newline included in what the content's
// hash sees, and refuses an unfinished or overlong one.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > maxLine {
			return nil, fmt.Errorf("a line longer than %d bytes", maxLine)
		}
		switch {
		case err == nil:
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			return nil, errors.New("the file ends before its trailer (truncated)")
		default:
			return nil, err
		}
	}
}

// checkEnd requires nothing after the trailer, and reads the compressed
// stream to its end so that gzip checks its CRC and length and the
// file's hash covers every byte.
func checkEnd(lines *bufio.Reader, raw io.Reader) error {
	if n, err := io.Copy(io.Discard, lines); err != nil {
		return err
	} else if n > 0 {
		return errors.New("bytes after the trailer")
	}
	_, err := io.Copy(io.Discard, raw)
	return err
}

func checkTrailer(t trailer, rows int64, sum string, m *Manifest, file hash.Hash) error {
	if t.Trailer.Rows != rows {
		return fmt.Errorf("the trailer counts %d rows, the file holds %d", t.Trailer.Rows, rows)
	}
	if t.Trailer.SHA256 != sum {
		return errors.New("the rows' SHA-256 differs from the trailer's")
	}
	m.SHA256 = hex.EncodeToString(file.Sum(nil))
	return nil
}
