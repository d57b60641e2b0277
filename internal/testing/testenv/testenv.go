package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/worker"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/pgtest"
)

// LogLevelEnv names the environment variable that sets the log level of
// test servers, clients and workers (default warn).
const LogLevelEnv = "OPENWOP_TEST_LOG"

// PersistenceEnv names the environment variable that chooses the
// persistence of the shared server (Temporal): unset or "sqlite" is
// in-memory SQLite; "postgres" is a PostgreSQL server pgtest starts for
// the test binary, with SQL visibility, so a chosen set of tests runs a
// second time against the persistence production clusters use.
const PersistenceEnv = "OPENWOP_TEST_PERSISTENCE"

// startTimeout bounds the start of a test server.
const startTimeout = 2 * time.Minute

// Env is a running Temporal server as a test sees it.
type Env struct {
	// Address is the frontend host:port.
	Address string
	// Namespace has the OpenWOP search attributes registered.
	Namespace string
	// Client is connected to Address and Namespace. Do not close it.
	Client client.Client
	// Logger is the quiet test logger the server and Client use.
	Logger *zap.Logger

	mu      sync.Mutex
	workers []*stopOnce
}

// shared is the server of this test binary, started by the first call to
// Temporal. It runs until the process exits.
var shared struct {
	once sync.Once
	env  *Env
	err  error
}

// Temporal returns the test binary's shared Temporal server, starting it on
// first use (free ports, namespace "default"; in-memory SQLite, or
// PostgreSQL as PersistenceEnv chooses).
func Temporal(t testing.TB) *Env {
	t.Helper()
	shared.once.Do(func() {
		// The server is never stopped: it lives as long as the test binary
		// (and PostgreSQL, if any, is stopped when the binary exits).
		shared.env, shared.err = startShared()
	})
	if shared.err != nil {
		t.Fatalf("testenv: start shared Temporal server: %v", shared.err)
	}
	return shared.env
}

// NewWorker starts a worker on taskQueue with what register registers, and
// stops it when the test ends.
func (e *Env) NewWorker(t testing.TB, taskQueue string, register func(worker.Registry)) worker.Worker {
	t.Helper()
	w := worker.New(e.Client, taskQueue, worker.Options{})
	register(w)
	if err := w.Start(); err != nil {
		t.Fatalf("testenv: start worker on %q: %v", taskQueue, err)
	}
	s := &stopOnce{w: w}
	e.mu.Lock()
	e.workers = append(e.workers, s)
	e.mu.Unlock()
	t.Cleanup(s.stop)
	return w
}

// stopWorkers stops every worker started by NewWorker.
func (e *Env) stopWorkers() {
	e.mu.Lock()
	ws := e.workers
	e.workers = nil
	e.mu.Unlock()
	for _, w := range ws {
		w.stop()
	}
}

type stopOnce struct {
	once sync.Once
	w    worker.Worker
}

func (s *stopOnce) stop() { s.once.Do(s.w.Stop) }

// UniqueTaskQueue returns a task queue name no other test uses: the test
// name plus a random suffix.
func UniqueTaskQueue(t testing.TB) string {
	return "tq-" + sanitize(t.Name()) + "-" + randomHex(6)
}

// UniqueID returns prefix followed by a random suffix, for workflow IDs
// that must not collide across tests on the shared server.
func UniqueID(prefix string) string { return prefix + randomHex(8) }

// Logger returns the test logger: console lines on stderr at the level of
// OPENWOP_TEST_LOG (default warn).
func Logger() *zap.Logger {
	level := zapcore.WarnLevel
	if v := os.Getenv(LogLevelEnv); v != "" {
		if l, err := zapcore.ParseLevel(v); err == nil {
			level = l
		}
	}
	cfg := zap.NewDevelopmentConfig()
	cfg.Level = zap.NewAtomicLevelAt(level)
	cfg.DisableStacktrace = true
	return zap.Must(cfg.Build())
}

// Server is a private embedded server on a SQLite file that a test can stop
// and restart. Its Env (address, client) changes on every restart.
type Server struct {
	*Env
	// DBFile is the SQLite file the server persists to.
	DBFile string

	srv *devtemporal.Server
}

// StartServer starts a private server persisted in dbFile (created if
// missing; its directory must exist, e.g. t.TempDir()). It is stopped when
// the test ends, unless stopped earlier.
func StartServer(t testing.TB, dbFile string) *Server {
	t.Helper()
	s := &Server{DBFile: dbFile}
	s.Start(t)
	t.Cleanup(s.Stop)
	return s
}

// Start starts the server on DBFile again after Stop, on new ports, with a
// new Env (re-read s.Client and s.Address afterwards).
func (s *Server) Start(t testing.TB) {
	t.Helper()
	if s.srv != nil {
		t.Fatalf("testenv: server on %s is already running", s.DBFile)
	}
	env, srv, err := start(devtemporal.Options{DBFile: s.DBFile})
	if err != nil {
		t.Fatalf("testenv: start Temporal server on %s: %v", s.DBFile, err)
	}
	s.Env, s.srv = env, srv
}

// Stop stops the server's workers, closes its client and stops the server.
// Workflow state stays in DBFile. Stop is a no-op when already stopped.
func (s *Server) Stop() {
	if s.srv == nil {
		return
	}
	s.stopWorkers()
	s.Client.Close()
	if err := s.srv.Stop(); err != nil {
		s.Logger.Warn("testenv: stop Temporal server", zap.Error(err))
	}
	s.srv = nil
}

// Restart is Stop followed by Start.
func (s *Server) Restart(t testing.TB) {
	t.Helper()
	s.Stop()
	s.Start(t)
}

// startShared starts the shared server on the persistence PersistenceEnv
// names.
func startShared() (*Env, error) {
	switch p := os.Getenv(PersistenceEnv); p {
	case "", "sqlite":
		env, _, err := start(devtemporal.Options{})
		return env, err
	case "postgres":
		ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
		defer cancel()
		pg, err := pgtest.Start(ctx, pgtest.Options{})
		if err != nil {
			return nil, err
		}
		env, _, err := start(devtemporal.Options{Postgres: &devtemporal.Postgres{Address: pg.Addr(), User: pg.User()}})
		if err != nil {
			_ = pg.Close()
		}
		return env, err
	default:
		return nil, fmt.Errorf("%s=%q: want sqlite or postgres", PersistenceEnv, p)
	}
}

// start starts a server with opts (logging added) and dials a client.
func start(opts devtemporal.Options) (*Env, *devtemporal.Server, error) {
	logger := Logger()
	level := logger.Level()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	opts.Logger, opts.LogLevel = logger, &level
	srv, err := devtemporal.Start(ctx, opts)
	if err != nil {
		return nil, nil, err
	}
	c, err := client.DialContext(ctx, client.Options{
		HostPort:  srv.Address(),
		Namespace: srv.Namespace(),
		Logger:    devtemporal.SDKLogger(logger),
	})
	if err != nil {
		_ = srv.Stop()
		return nil, nil, fmt.Errorf("dial %s: %w", srv.Address(), err)
	}
	return &Env{Address: srv.Address(), Namespace: srv.Namespace(), Client: c, Logger: logger}, srv, nil
}

func sanitize(name string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '-'
	}, name)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
