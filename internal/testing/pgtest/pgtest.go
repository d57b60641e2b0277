package pgtest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// EnvBinDir names the environment variable that points at the directory
// of the PostgreSQL server binaries, ahead of every other place Binaries
// looks.
const EnvBinDir = "OPENWOP_POSTGRES_BIN"

// User is the superuser initdb creates; it connects without a password
// from loopback.
const User = "postgres"

// DefaultRunAs is the account the server runs as when the caller is root.
const DefaultRunAs = "nobody"

// readyTimeout bounds the wait for a started server to accept
// connections.
const readyTimeout = time.Minute

// Options configure Start. The zero value is a new temporary directory, a
// free port, and the server's log discarded.
type Options struct {
	// Dir is the data directory. Empty means a new temporary directory that
	// Close removes. A directory that holds a cluster already (PG_VERSION)
	// is started as it is; an empty or missing one is initialised. Its
	// parents must be searchable by RunAs.
	Dir string
	// Port is the port on 127.0.0.1. 0 picks a free one (kept across
	// Restart).
	Port int
	// RunAs is the user the server runs as when the caller is root.
	// Default DefaultRunAs.
	RunAs string
	// Log receives the server's log lines. nil discards them.
	Log io.Writer
}

// Server is a running (or stopped) PostgreSQL server.
type Server struct {
	bin  string
	dir  string
	port int
	log  io.Writer
	cred *syscall.Credential
	tmp  string // the temporary directory Start created, "" if none

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd exited
}

// Start initialises the data directory if needed, starts the server and
// returns once it accepts connections.
func Start(ctx context.Context, opts Options) (*Server, error) {
	bin, err := Binaries()
	if err != nil {
		return nil, err
	}
	s := &Server{bin: bin, dir: opts.Dir, port: opts.Port, log: opts.Log}
	if s.log == nil {
		s.log = io.Discard
	}
	if s.cred, err = credential(opts.RunAs); err != nil {
		return nil, err
	}
	if s.dir == "" {
		if s.tmp, err = tempDir(); err != nil {
			return nil, err
		}
		s.dir = filepath.Join(s.tmp, "data")
	}
	if s.port == 0 {
		if s.port, err = freePort(); err != nil {
			return nil, err
		}
	}
	if err := s.initdb(ctx); err != nil {
		s.removeDir()
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		s.removeDir()
		return nil, err
	}
	return s, nil
}

// Addr is the host:port the server listens on.
func (s *Server) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port)) }

// Port is the port the server listens on.
func (s *Server) Port() int { return s.port }

// Dir is the data directory.
func (s *Server) Dir() string { return s.dir }

// User is the superuser to connect as (no password).
func (s *Server) User() string { return User }

// Pid is the process id of the running postmaster, 0 when stopped.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Start starts a stopped server on its data directory and port and waits
// until it accepts connections.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	if s.cmd != nil {
		s.mu.Unlock()
		return fmt.Errorf("pgtest: server on %s is already running", s.dir)
	}
	cmd := s.command(ctx, "postgres", "-D", s.dir, "-p", strconv.Itoa(s.port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories="+s.dir,
		"-c", "max_connections=500", "-c", "fsync=off")
	// A context bounds the start only, not the server's life.
	cmd.Cancel = func() error { return nil }
	cmd.SysProcAttr.Pdeathsig = syscall.SIGQUIT
	cmd.Stdout, cmd.Stderr = s.log, s.log
	if err := cmd.Start(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("pgtest: start postgres: %w", err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	s.cmd, s.done = cmd, done
	s.mu.Unlock()
	return s.waitReady(ctx, done)
}

// Stop shuts the server down cleanly (fast mode: open sessions are ended)
// and keeps the data. It is a no-op when the server is stopped.
func (s *Server) Stop() error { return s.signal(syscall.SIGINT) }

// Crash stops the server as a crash would (immediate mode: no checkpoint;
// the next Start recovers from the write-ahead log).
func (s *Server) Crash() error { return s.signal(syscall.SIGQUIT) }

// Restart is Crash followed by Start.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Crash(); err != nil {
		return err
	}
	return s.Start(ctx)
}

// Close stops the server and removes the data directory if Start created
// it.
func (s *Server) Close() error {
	err := s.Stop()
	s.removeDir()
	return err
}

func (s *Server) signal(sig syscall.Signal) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil
	}
	if err := s.cmd.Process.Signal(sig); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("pgtest: stop postgres: %w", err)
	}
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
	return nil
}

func (s *Server) removeDir() {
	if s.tmp != "" {
		_ = os.RemoveAll(s.tmp)
	}
}

// initdb creates the cluster unless the directory holds one.
func (s *Server) initdb(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(s.dir, "PG_VERSION")); err == nil {
		return nil
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("pgtest: data directory: %w", err)
	}
	if s.cred != nil {
		if err := os.Chown(s.dir, int(s.cred.Uid), int(s.cred.Gid)); err != nil {
			return fmt.Errorf("pgtest: data directory: %w", err)
		}
	}
	cmd := s.command(ctx, "initdb", "-D", s.dir, "-U", User, "--auth=trust", "-E", "UTF8", "--no-sync")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("pgtest: initdb %s: %w\n%s", s.dir, err, out)
	}
	return nil
}

// command is a PostgreSQL binary run as the server's user.
func (s *Server) command(ctx context.Context, name string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, filepath.Join(s.bin, name), args...)
	cmd.Dir = s.dir
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: s.cred}
	return cmd
}

// waitReady polls pg_isready until the server accepts connections, the
// server exits, or the time is up.
func (s *Server) waitReady(ctx context.Context, exited <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	for {
		out, err := s.command(ctx, "pg_isready", "-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-U", User).CombinedOutput()
		if err == nil {
			return nil
		}
		select {
		case <-exited:
			s.mu.Lock()
			s.cmd = nil
			s.mu.Unlock()
			return fmt.Errorf("pgtest: postgres exited at start (see its log)")
		case <-ctx.Done():
			_ = s.Crash()
			return fmt.Errorf("pgtest: postgres not ready: %s: %w", strings.TrimSpace(string(out)), ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Binaries returns the directory of the PostgreSQL server binaries:
// $OPENWOP_POSTGRES_BIN, else the directory of initdb on PATH, else
// `pg_config --bindir`, else the newest /usr/lib/postgresql/*/bin (Debian
// keeps initdb off PATH).
func Binaries() (string, error) {
	var candidates []string
	if d := os.Getenv(EnvBinDir); d != "" {
		candidates = append(candidates, d)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		candidates = append(candidates, filepath.Dir(p))
	}
	if out, err := exec.Command("pg_config", "--bindir").Output(); err == nil {
		candidates = append(candidates, strings.TrimSpace(string(out)))
	}
	debian, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	for i := len(debian) - 1; i >= 0; i-- {
		candidates = append(candidates, debian[i])
	}
	for _, d := range candidates {
		if isFile(filepath.Join(d, "initdb")) && isFile(filepath.Join(d, "postgres")) {
			return d, nil
		}
	}
	return "", errors.New("pgtest: PostgreSQL server binaries (initdb, postgres) not found: install the Debian package postgresql, or set " + EnvBinDir)
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

// credential is the user to run as when the caller is root, nil otherwise.
func credential(runAs string) (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	runAs = cmp.Or(runAs, DefaultRunAs)
	u, err := user.Lookup(runAs)
	if err != nil {
		return nil, fmt.Errorf("pgtest: PostgreSQL refuses to run as root, and user %q to run it as: %w", runAs, err)
	}
	uid, err := strconv.ParseUint(u.Uid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: uid of %s: %w", runAs, err)
	}
	gid, err := strconv.ParseUint(u.Gid, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("pgtest: gid of %s: %w", runAs, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
}

// tempPrefix starts the names of the temporary directories Start creates.
const tempPrefix = "openwop-pgtest-"

// staleAge is how old a temporary directory without a running server
// must be before tempDir removes it.
const staleAge = 30 * time.Minute

// tempDir creates a directory for a data directory under the system's
// temporary directory, searchable by the server's user (a test's private
// directory is not). It first removes the directories of earlier
// processes that never called Close (a test binary's shared server): old
// ones whose server is not running.
func tempDir() (string, error) {
	old, _ := filepath.Glob(filepath.Join(os.TempDir(), tempPrefix+"*"))
	for _, d := range old {
		fi, err := os.Stat(d)
		if err != nil || time.Since(fi.ModTime()) < staleAge || isFile(filepath.Join(d, "data", "postmaster.pid")) {
			continue
		}
		_ = os.RemoveAll(d)
	}
	d, err := os.MkdirTemp("", tempPrefix)
	if err != nil {
		return "", fmt.Errorf("pgtest: temporary directory: %w", err)
	}
	if err := os.Chmod(d, 0o755); err != nil {
		return "", fmt.Errorf("pgtest: temporary directory: %w", err)
	}
	return d, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Install makes sure the PostgreSQL server binaries are there: when
// Binaries finds none, it installs the Debian package postgresql with
// apt-get (through sudo when the caller is not root), writing apt's output
// to log. It is what the load harness runs before Start, so that it needs
// nothing installed beforehand on a Debian machine.
func Install(ctx context.Context, log io.Writer) error {
	if _, err := Binaries(); err == nil {
		return nil
	}
	if log == nil {
		log = io.Discard
	}
	var prefix []string
	if os.Geteuid() != 0 {
		prefix = []string{"sudo", "-n"}
	}
	for _, args := range [][]string{
		{"apt-get", "update", "-qq"},
		{"apt-get", "install", "-y", "-qq", "--no-install-recommends", "postgresql"},
	} {
		args = append(prefix, args...)
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("pgtest: install PostgreSQL (%s): %w", strings.Join(args, " "), err)
		}
	}
	if _, err := Binaries(); err != nil {
		return fmt.Errorf("pgtest: PostgreSQL installed, but: %w", err)
	}
	return nil
}
