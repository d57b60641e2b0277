package datadir_test

import (
	"bytes"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/openwop/temporal-mcp/internal/app/datadir"
)

// TestKey: Key creates the key file once (owner-only, a key and a
// newline), returns the same key from then on, and refuses, naming the
// file and leaving it as it is, one that group or others may read or
// write, one that is not a regular file and one that holds no key.
func TestKey(t *testing.T) {
	valid := strings.Repeat("0123456789abcdef", 4)
	cases := []struct {
		name  string
		setup func(t *testing.T, path string) // nil: no file
		want  string                          // the key wanted; "" when generated
		err   string                          // the error wanted, besides the path
	}{
		{name: "created", setup: nil},
		{name: "reused", setup: write(valid+"\n", 0o600), want: valid},
		{name: "reused without newline", setup: write(valid, 0o400), want: valid},
		{name: "readable by others", setup: write(valid+"\n", 0o604), err: "has mode 0604: group or others may read or write it"},
		{name: "readable by group", setup: write(valid+"\n", 0o640), err: "has mode 0640"},
		{name: "writable by group", setup: write(valid+"\n", 0o620), err: "has mode 0620"},
		{name: "empty", setup: write("", 0o600), err: "is corrupt (want 64 hexadecimal characters"},
		{name: "short", setup: write(valid[:63]+"\n", 0o600), err: "is corrupt"},
		{name: "long", setup: write(valid+"0\n", 0o600), err: "is corrupt"},
		{name: "not hex", setup: write(strings.Repeat("z", 64)+"\n", 0o600), err: "is corrupt"},
		{name: "two newlines", setup: write(valid+"\n\n", 0o600), err: "is corrupt"},
		{name: "a directory", setup: func(t *testing.T, path string) {
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, err: "is not a regular file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			path := filepath.Join(dir, datadir.KeyFile)
			var before []byte
			if c.setup != nil {
				if err := os.MkdirAll(dir, 0o755); err != nil {
					t.Fatal(err)
				}
				c.setup(t, path)
				before, _ = os.ReadFile(path)
			}
			key, err := datadir.Key(dir)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("Key = %q, %v; want an error naming %s: %q", key, err, path, c.err)
				}
				if after, _ := os.ReadFile(path); !bytes.Equal(after, before) {
					t.Fatalf("the refused file changed: %q, was %q", after, before)
				}
				return
			}
			if err != nil {
				t.Fatalf("Key: %v", err)
			}
			if c.want != "" && string(key) != c.want {
				t.Fatalf("Key = %q, want the file's %q", key, c.want)
			}
			if _, err := hex.DecodeString(string(key)); err != nil || len(key) != datadir.KeyLen {
				t.Fatalf("Key = %q, want %d hexadecimal characters", key, datadir.KeyLen)
			}
			info, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if c.setup == nil && info.Mode().Perm() != 0o600 {
				t.Errorf("created with mode %04o, want 0600", info.Mode().Perm())
			}
			if again, err := datadir.Key(dir); err != nil || !bytes.Equal(again, key) {
				t.Fatalf("Key again = %q, %v; want %q", again, err, key)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 1 {
				t.Errorf("data directory holds %d entries, want the key file only", len(entries))
			}
		})
	}
}

// write returns a setup that writes content to the key file with perm.
func write(content string, perm os.FileMode) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(path, perm); err != nil { // past the umask
			t.Fatal(err)
		}
	}
}

// TestKeyRace: processes that start on a new data directory at once all
// get the one key that was created.
func TestKeyRace(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	keys := make([][]byte, 16)
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i := range keys {
		wg.Go(func() { keys[i], errs[i] = datadir.Key(dir) })
	}
	wg.Wait()
	for i := range keys {
		if errs[i] != nil || !bytes.Equal(keys[i], keys[0]) {
			t.Fatalf("Key %d = %q, %v; want %q like the first", i, keys[i], errs[i], keys[0])
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, datadir.KeyFile))
	if err != nil || string(b) != string(keys[0])+"\n" {
		t.Fatalf("key file = %q, %v; want %q and a newline", b, err, keys[0])
	}
}
