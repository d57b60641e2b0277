package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/openwop/temporal-mcp/auth"
	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/signals"
)

// The benchmark runs in two processes, as the things it compares do: the
// server process (BenchmarkIssue11) holds the embedded server, the
// in-process worker and the mounts, as cmd/server does; the client process
// (TestBenchClientChild, the test binary again) holds the MCP client and
// the raw SDK program, each with its own connections, and measures every
// latency and throughput row. A client in the server's process would share
// its Go scheduler: the first workflow task an eager start hands to the
// worker, for one, would delay the client's own read of the answer, which
// no real client sees.

// clientEnv carries the clientConfig (JSON) to the client process.
const clientEnv = "OPENWOP_BENCH_CLIENT"

// clientConfig is what the client process needs to know of the stack.
type clientConfig struct {
	// Address and Namespace of the embedded Temporal server.
	Address, Namespace string
	// TaskQueue and Spec of the benchmark's tool.
	TaskQueue string
	Spec      signals.ToolSpec
	// Mounts are the URLs of the mounts, in the order of startVariants.
	Mounts []string
	// Control is the URL of the server process's control endpoint.
	Control string
}

// rowsPrefix starts the line on which the client process reports its rows.
const rowsPrefix = "BENCH-ROWS"

// runClient runs the client process against s and returns its rows.
func runClient(s *stack, control string) ([][]string, error) {
	cfg := clientConfig{Address: s.srv.Address(), Namespace: s.srv.Namespace(), TaskQueue: s.tq, Spec: s.spec, Control: control}
	for _, m := range s.mounts {
		cfg.Mounts = append(cfg.Mounts, m.url)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	var rows [][]string
	if err := runChild("TestBenchClientChild", []string{clientEnv + "=" + string(raw)}, rowsPrefix, &rows); err != nil {
		return rows, fmt.Errorf("client process: %w", err)
	}
	return rows, nil
}

// runChild runs the test binary again, only the test named test, with
// env added to this process's environment, and decodes into out the JSON
// of the line it printed with jsonLine(prefix, …). The child has this
// process's -test.timeout (the 100,000-open-task level of the external
// mode runs for most of an hour).
func runChild(test string, env []string, prefix string, out any) error {
	timeout := "50m"
	if f := flag.Lookup("test.timeout"); f != nil && f.Value.String() != "0s" {
		timeout = f.Value.String()
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.timeout="+timeout)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%s: %w\n%s\n%s", test, err, stdout, stderr.Bytes())
	}
	// A child that failed may still have printed what it measured before.
	sc := bufio.NewScanner(bytes.NewReader(stdout))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if line, ok := strings.CutPrefix(sc.Text(), prefix+" "); ok {
			return errors.Join(err, json.Unmarshal([]byte(line), out))
		}
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%s printed no %s line:\n%s\n%s", test, prefix, stdout, stderr.Bytes())
}

// TestBenchClientChild is the client process of BenchmarkIssue11 (skipped
// unless the benchmark runs it): it measures every latency and throughput
// row against the stack clientEnv describes and prints them on one line.
func TestBenchClientChild(t *testing.T) {
	rawCfg := os.Getenv(clientEnv)
	if rawCfg == "" {
		t.Skip("BenchmarkIssue11 runs this in its client process")
	}
	var cfg clientConfig
	if err := json.Unmarshal([]byte(rawCfg), &cfg); err != nil {
		t.Fatalf("%s: %v", clientEnv, err)
	}
	s := &stack{tq: cfg.TaskQueue, spec: cfg.Spec, caller: auth.Anonymous(), control: cfg.Control,
		calls: &callLog{byID: map[string][]string{}}}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var err error
	s.c, err = client.DialContext(ctx, client.Options{
		HostPort: cfg.Address, Namespace: cfg.Namespace, Logger: devtemporal.SDKLogger(zap.NewNop()),
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(s.calls.intercept)}},
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer s.close()
	transport := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256, IdleConnTimeout: time.Minute}
	for _, u := range cfg.Mounts {
		s.mounts = append(s.mounts, &mcpClient{url: u, http: &http.Client{Transport: transport, Timeout: time.Minute}})
	}
	tb, err := measure(context.Background(), s, envInt("OPENWOP_BENCH_N", defaultN), envInt("OPENWOP_BENCH_SECONDS", defaultSeconds))
	if err != nil {
		// The rows measured so far are printed, and the row that failed
		// says how; the benchmark still fails.
		first, _, _ := strings.Cut(err.Error(), "\n")
		tb.add("(the run stopped here)", "", "", "", "", "", "", "", "", "ERROR", first)
	}
	fmt.Println(jsonLine(rowsPrefix, tb.rows))
	if err != nil {
		t.Fatal(err)
	}
}

// serveControl serves, from the server process, what the client process
// asks of it: the Temporal calls the mounts made about a workflow
// (GET /calls?id=), and the traced mount (POST /traced starts it and
// answers its URL, DELETE /traced stops it). It returns the endpoint's URL.
func (s *stack) serveControl(tb testing.TB) string {
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("GET /calls", func(w http.ResponseWriter, r *http.Request) {
		writeControl(w, s.calls.of(r.URL.Query().Get("id")), nil)
	})
	mux.HandleFunc("POST /traced", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if s.traced != nil {
			writeControl(w, nil, errors.New("the traced mount already runs"))
			return
		}
		m, stop, err := s.startTracedMount(r.Context())
		if err != nil {
			writeControl(w, nil, err)
			return
		}
		s.traced = stop
		writeControl(w, struct{ URL string }{m.url}, nil)
	})
	mux.HandleFunc("DELETE /traced", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if s.traced != nil {
			s.traced()
			s.traced = nil
		}
		writeControl(w, struct{}{}, nil)
	})
	hs := httptest.NewServer(mux)
	tb.Cleanup(func() {
		hs.Close()
		mu.Lock()
		defer mu.Unlock()
		if s.traced != nil {
			s.traced()
		}
	})
	return hs.URL
}

// writeControl answers a control request: v as JSON, or err with status 500.
func writeControl(w http.ResponseWriter, v any, err error) {
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// controlCall sends one request to the server process's control endpoint
// and decodes its JSON answer into out (unless nil).
func (s *stack) controlCall(method, path string, out any) error {
	req, err := http.NewRequest(method, s.control+path, nil)
	if err != nil {
		return err
	}
	resp, err := s.mcp().http.Do(req)
	if err != nil {
		return fmt.Errorf("control %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("control %s %s: HTTP %d: %s", method, path, resp.StatusCode, bytes.TrimSpace(body))
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(body, out)
}
