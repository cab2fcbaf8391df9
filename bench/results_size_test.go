package bench

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxResultFile bounds one committed file under bench/results other than a
// legacy plain .json result. Every rerun of a part rewrites its files, and
// the repository limits what one submission may change: a compressed run is
// at most a few hundred KiB (W6's largest, 3 MB of JSON, is about 400 KiB).
const maxResultFile = 2 << 20

// The committed results stay small: a result written since results are
// compressed (.json.gz) is gzip and within maxResultFile, and so is every
// other file there. Plain .json results are the parts not rerun since; a
// rerun replaces them with .json.gz (bench compare, bench-default.sh).
func TestCommittedResultsStaySmall(t *testing.T) {
	const dir = "results" // bench/results, from this package's directory
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("no %s directory", dir)
	}
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == filepath.Join(dir, "tmp") {
				return filepath.SkipDir // a running part's staging directory (git-ignored)
			}
			return nil
		}
		name := d.Name()
		if strings.HasSuffix(name, ".json") {
			return nil // legacy plain JSON, kept until its part is rerun
		}
		n++
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Size() > maxResultFile {
			t.Errorf("%s is %d bytes, over the %d-byte limit of a committed results file", path, info.Size(), maxResultFile)
		}
		if strings.HasSuffix(name, GzipSuffix) {
			if gz, err := startsGzip(path); err != nil {
				return err
			} else if !gz {
				t.Errorf("%s is not gzip-compressed (results are written with Result.WriteFile)", path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Errorf("no file checked under %s (PROVENANCE.md at least should be there)", dir)
	}
}

// startsGzip reports whether the file at path starts with gzip's magic bytes.
func startsGzip(path string) (bool, error) {
	f, err := os.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	b := make([]byte, 2)
	if _, err := io.ReadFull(f, b); err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return false, err
	}
	return IsGzip(b), nil
}
