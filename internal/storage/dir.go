package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/appruntime/appruntime/internal/apperr"
)

// MaxKeyBytes bounds a key: far above what the platform's keys use
// ("files/<task id>/<file id>" is 80 bytes), far below PATH_MAX.
const MaxKeyBytes = 512

// tempPrefix starts the name of a blob being written. A key segment may not
// start with a dot, so a temporary file never shadows a key.
const tempPrefix = ".tmp-"

// Dir stores blobs as files under a directory, one file per key (the key's
// segments are the path below the directory). It is for one machine, or for
// several sharing the directory on a volume (NFS, a mounted disk): Put is
// atomic (a temporary file, fsync, rename, fsync of the directory), so a
// reader sees the old bytes or the new ones, never a half-written file, and
// a crash leaves at worst a stray temporary file.
//
// Keys are opaque to callers but must be safe paths: segments of letters,
// digits, '-', '_' and '.', not starting with a dot, joined by '/'. Anything
// else is refused before the file system is touched, and every access goes
// through an os.Root, which also refuses symbolic links that leave the
// directory.
type Dir struct {
	root *os.Root
	path string
}

// NewDir opens (creating it, mode 0700, when absent) the directory at dir
// and checks that a blob can be written there.
func NewDir(dir string) (*Dir, error) {
	if strings.TrimSpace(dir) == "" {
		return nil, errors.New("storage: no directory given")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", dir, err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", dir, err)
	}
	d := &Dir{root: root, path: dir}
	if err := d.probe(); err != nil {
		_ = root.Close()
		return nil, err
	}
	return d, nil
}

// probe writes and removes a temporary file, so that a read-only or full
// volume stops the process at start-up rather than at the first upload.
func (d *Dir) probe() error {
	name, err := d.writeTemp(".", []byte("probe"))
	if err != nil {
		return fmt.Errorf("storage: %s is not writable: %w", d.path, err)
	}
	return d.root.Remove(name)
}

// Close releases the directory.
func (d *Dir) Close() error { return d.root.Close() }

// CheckKey reports whether key may name a blob of a Dir (see Dir); the
// error is an apperr invalid error.
func CheckKey(key string) error {
	if key == "" {
		return apperr.Invalidf("storage: empty key")
	}
	if len(key) > MaxKeyBytes {
		return apperr.Invalidf("storage: key longer than %d bytes", MaxKeyBytes)
	}
	for seg := range strings.SplitSeq(key, "/") {
		if seg == "" || seg[0] == '.' {
			return apperr.Invalidf("storage: key %q has an empty segment or one starting with a dot", key)
		}
		for _, c := range seg {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
				return apperr.Invalidf("storage: key %q has a character other than letters, digits, '-', '_', '.' and '/'", key)
			}
		}
	}
	return nil
}

// Put implements Store: the bytes reach the disk (file and directory
// entry fsynced) before Put returns.
func (d *Dir) Put(ctx context.Context, key, _ string, data []byte) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	dir := path.Dir(key)
	if err := d.root.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	tmp, err := d.writeTemp(dir, data)
	if err != nil {
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	if err := d.root.Rename(tmp, key); err != nil {
		_ = d.root.Remove(tmp)
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	if err := d.syncDir(dir); err != nil {
		return fmt.Errorf("storage: put %s: %w", key, err)
	}
	return nil
}

// writeTemp writes data to a new temporary file in dir and fsyncs it,
// returning its name (relative to the root).
func (d *Dir) writeTemp(dir string, data []byte) (string, error) {
	var suffix [12]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return "", err
	}
	name := path.Join(dir, tempPrefix+hex.EncodeToString(suffix[:]))
	f, err := d.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	if err != nil {
		_ = d.root.Remove(name)
		return "", err
	}
	return name, nil
}

// syncDir fsyncs a directory, so that a rename in it survives a crash.
func (d *Dir) syncDir(dir string) error {
	f, err := d.root.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if closeErr := f.Close(); err == nil {
		err = closeErr
	}
	return err
}

// Get implements Store.
func (d *Dir) Get(ctx context.Context, key string) ([]byte, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := d.root.ReadFile(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, apperr.NotFoundf("blob %s not found", key)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: get %s: %w", key, err)
	}
	return data, nil
}

// Open implements Store.
func (d *Dir) Open(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := d.root.Open(key)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, apperr.NotFoundf("blob %s not found", key)
	}
	if err != nil {
		return nil, fmt.Errorf("storage: open %s: %w", key, err)
	}
	return f, nil
}

// Delete implements Store. Empty directories are left in place: another
// Put may be creating a file in them at the same moment.
func (d *Dir) Delete(ctx context.Context, key string) error {
	if err := CheckKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	err := d.root.Remove(key)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("storage: delete %s: %w", key, err)
	}
	return nil
}
