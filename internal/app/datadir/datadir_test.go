package datadir_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/openwop/temporal-mcp/internal/app/datadir"
)

// held asserts that err is a *HeldError and returns it.
func held(t *testing.T, err error) *datadir.HeldError {
	t.Helper()
	var h *datadir.HeldError
	if !errors.As(err, &h) {
		t.Fatalf("err = %v, want a *HeldError", err)
	}
	return h
}

// TestLockExcludes shows that a held directory cannot be locked again (even
// by this process), that the refusal names the holder's pid and, once
// published, its server, and that Release frees it.
func TestLockExcludes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	l, err := datadir.TryLock(dir)
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, datadir.LockFile)); strings.TrimSpace(string(b)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file = %q, want the pid", b)
	}

	h := held(t, tryLock(dir))
	if h.Holder.PID != os.Getpid() || h.Holder.TemporalAddress != "" || !strings.Contains(h.Error(), "not serving yet") {
		t.Fatalf("before Publish: %+v (%v)", h.Holder, h)
	}
	if err := l.Publish(datadir.Holder{TemporalAddress: "127.0.0.1:4242", Namespace: "default", UIURL: "http://127.0.0.1:4343"}); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	h = held(t, tryLock(dir))
	want := "data directory " + l.Dir() + " is in use by process " + strconv.Itoa(os.Getpid()) + " (Temporal at 127.0.0.1:4242, namespace default)"
	if h.Holder.TemporalAddress != "127.0.0.1:4242" || h.Holder.UIURL != "http://127.0.0.1:4343" || h.Error() != want {
		t.Fatalf("after Publish: %+v, %q; want %q", h.Holder, h.Error(), want)
	}

	if err := l.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, datadir.InfoFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("%s after Release: %v", datadir.InfoFile, err)
	}
	l2, err := datadir.TryLock(dir)
	if err != nil {
		t.Fatalf("TryLock after Release: %v", err)
	}
	_ = l2.Release()
}

// tryLock is TryLock that releases a lock it got (which the caller did not
// expect) and returns the error.
func tryLock(dir string) error {
	l, err := datadir.TryLock(dir)
	if err == nil {
		_ = l.Release()
		return errors.New("locked a held directory")
	}
	return err
}

// TestStaleRecordIgnored: a record left by a holder that was killed names
// another pid; it neither counts as the current holder's server nor
// survives the next TryLock.
func TestStaleRecordIgnored(t *testing.T) {
	dir := t.TempDir()
	stale := []byte(`{"pid": 999999999, "temporalAddress": "127.0.0.1:1", "namespace": "default"}`)
	if err := os.WriteFile(filepath.Join(dir, datadir.InfoFile), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := datadir.TryLock(dir)
	if err != nil {
		t.Fatalf("TryLock: %v", err)
	}
	defer l.Release()
	if _, err := os.Stat(filepath.Join(dir, datadir.InfoFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stale %s kept: %v", datadir.InfoFile, err)
	}
	// Written again by someone else while held: still not the holder's.
	if err := os.WriteFile(filepath.Join(dir, datadir.InfoFile), stale, 0o644); err != nil {
		t.Fatal(err)
	}
	if h := held(t, tryLock(dir)); h.Holder.TemporalAddress != "" || h.Holder.PID != os.Getpid() {
		t.Fatalf("holder = %+v, want this pid and no server", h.Holder)
	}
}

// TestClaimWaits: Claim on a held directory returns once the holder
// published its server (a *HeldError carrying it), and takes the lock when
// the holder releases it instead; Watch returns the lock on release.
func TestClaimWaits(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	l, err := datadir.TryLock(dir)
	if err != nil {
		t.Fatal(err)
	}
	claimed := make(chan error, 1)
	go func() {
		l2, err := datadir.Claim(ctx, dir)
		if err == nil {
			_ = l2.Release()
			err = errors.New("claimed a held directory")
		}
		claimed <- err
	}()
	if err := l.Publish(datadir.Holder{TemporalAddress: "127.0.0.1:4242", Namespace: "default"}); err != nil {
		t.Fatal(err)
	}
	if h := held(t, <-claimed); h.Holder.TemporalAddress != "127.0.0.1:4242" {
		t.Fatalf("Claim = %+v", h.Holder)
	}

	// A Claim that gives up names what it knows.
	short, scancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer scancel()
	_ = l.Release()
	if l, err = datadir.TryLock(dir); err != nil {
		t.Fatal(err)
	}
	if h := held(t, func() error { _, err := datadir.Claim(short, dir); return err }()); h.Holder.PID != os.Getpid() {
		t.Fatalf("Claim after its ctx: %+v", h.Holder)
	}

	got := make(chan *datadir.Lock, 2)
	go func() { l, _ := datadir.Claim(ctx, dir); got <- l }()
	go func() { l, _ := datadir.Watch(ctx, dir); got <- l }()
	_ = l.Release()
	first := <-got
	if first == nil {
		t.Fatal("Claim or Watch failed after the release")
	}
	_ = first.Release() // the other one gets it now
	if second := <-got; second == nil {
		t.Fatal("the second of Claim and Watch failed")
	} else {
		_ = second.Release()
	}
}

// TestLockAcrossProcesses holds the lock in another process: this one is
// refused with that process's pid and server, and gets the lock once the
// other is killed (the kernel releases it; no cleanup ran), with the dead
// holder's record gone.
func TestLockAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("DATADIR_TEST_HOLD"); dir != "" {
		holdForParent(dir)
		return
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockAcrossProcesses$")
	cmd.Env = append(os.Environ(), "DATADIR_TEST_HOLD="+dir)
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if line, err := bufio.NewReader(stdout).ReadString('\n'); err != nil || line != "held\n" {
		t.Fatalf("helper said %q, %v", line, err)
	}

	h := held(t, tryLock(dir))
	if h.Holder.PID != cmd.Process.Pid || h.Holder.TemporalAddress != "127.0.0.1:7777" {
		t.Fatalf("holder = %+v, want pid %d at 127.0.0.1:7777", h.Holder, cmd.Process.Pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := datadir.Watch(ctx, dir)
	if err != nil {
		t.Fatalf("Watch after the holder was killed: %v", err)
	}
	defer l.Release()
	if _, err := os.Stat(filepath.Join(dir, datadir.InfoFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the killed holder's record survived: %v", err)
	}
}

// holdForParent is the helper process of TestLockAcrossProcesses: it locks
// dir, publishes, says so, and waits to be killed.
func holdForParent(dir string) {
	l, err := datadir.TryLock(dir)
	if err != nil {
		os.Exit(2)
	}
	if err := l.Publish(datadir.Holder{TemporalAddress: "127.0.0.1:7777", Namespace: "default"}); err != nil {
		os.Exit(3)
	}
	os.Stdout.WriteString("held\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	os.Exit(0)
}
