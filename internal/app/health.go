package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"go.temporal.io/sdk/client"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/httpgate"
	"github.com/openwop/temporal-mcp/runs"
)

// Timeouts of /healthz.
const (
	// healthTimeout bounds the Temporal checks of /healthz.
	healthTimeout = 3 * time.Second
	// recheckAfter is how often /healthz checks the search attributes
	// again while they are missing.
	recheckAfter = 5 * time.Second
)

// localGate applies the request gate (Host, Origin) to requests that
// arrived on a loopback address, where DNS rebinding reaches a local
// server; a probe on another address (a container orchestrator's, naming
// the pod's IP) passes whatever the configured hosts.
func localGate(g *httpgate.Gate, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if httpgate.LocalRequest(r) {
			if rej := g.CheckHostOrigin(r); rej != nil {
				b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": rej.Code, "message": rej.Message}})
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(rej.Status)
				_, _ = w.Write(b)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackAddr reports whether the host of the host:port addr is a
// loopback address.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// checkSearchAttributes ensures the run search attributes and records the
// outcome for /healthz, logging a failure.
func (a *App) checkSearchAttributes(ctx context.Context) {
	err := runs.EnsureSearchAttributes(ctx, a.Client, a.Namespace)
	a.saMu.Lock()
	prev := a.saErr
	a.saErr, a.saChecked = err, time.Now()
	a.saMu.Unlock()
	switch {
	case err != nil && (prev == nil || prev.Error() != err.Error()):
		config.LogSearchAttributes(a.Logger, err)
	case err == nil && prev != nil:
		a.Logger.Info("the run search attributes exist now", zap.String("namespace", a.Namespace))
	}
}

// Health is the body of GET /healthz.
type Health struct {
	// Status is "ok" (HTTP 200); "degraded" (HTTP 200) when no worker
	// serves some task queue; "unavailable" when Temporal does not answer,
	// or "unhealthy" when the namespace lacks the run search attributes
	// (both HTTP 503).
	Status   string         `json:"status"`
	Temporal TemporalHealth `json:"temporal"`
	// SearchAttributes is set when the run search attributes are missing.
	SearchAttributes *SearchAttributesHealth `json:"searchAttributes,omitempty"`
	// Workers is set when no worker serves some task queue.
	Workers *WorkersHealth `json:"workers,omitempty"`
	// Issuers is set when the metadata of some OAuth issuer could not be
	// fetched: its tokens are refused until it is.
	Issuers *IssuersHealth `json:"issuers,omitempty"`
}

// IssuersHealth names the OAuth issuers that could not be reached.
type IssuersHealth struct {
	// Unreachable maps each issuer to its last error.
	Unreachable map[string]string `json:"unreachable"`
	// Message says what that means.
	Message string `json:"message"`
}

// WorkersHealth names the task queues that no worker serves, and the
// versions whose pinned runs no worker serves.
type WorkersHealth struct {
	// Unserved are the task queues no worker polls, sorted.
	Unserved []string `json:"unserved"`
	// Versions are the Worker Deployment versions that runs are pinned to
	// and that no worker of polls its task queue (workers of other builds
	// may: they do not serve those runs).
	Versions []VersionHealth `json:"versions,omitempty"`
	// Message says what that means and what to do.
	Message string `json:"message"`
}

// VersionHealth is a version whose pinned runs wait for its workers.
type VersionHealth struct {
	TaskQueue      string `json:"taskQueue"`
	DeploymentName string `json:"deploymentName"`
	BuildID        string `json:"buildId"`
}

// workersHealth is the report of unserved, or nil when it is empty.
func workersHealth(unserved []runs.Unserved) *WorkersHealth {
	if len(unserved) == 0 {
		return nil
	}
	h := &WorkersHealth{Unserved: []string{}}
	var msgs, queues []string
	for _, u := range unserved {
		if u.Version == nil {
			h.Unserved = append(h.Unserved, u.TaskQueue)
			continue
		}
		h.Versions = append(h.Versions, VersionHealth{TaskQueue: u.TaskQueue, DeploymentName: u.Version.DeploymentName, BuildID: u.Version.BuildID})
		queues = append(queues, fmt.Sprintf("no worker of %s polls it: the runs pinned to that build wait; start its workers, "+
			"or move its runs to the current version (openwop-server versions move-runs -deployment %s -build-id %s)",
			u, u.Version.DeploymentName, u.Version.BuildID))
	}
	if len(h.Unserved) > 0 {
		msgs = append(msgs, fmt.Sprintf("no worker polls task queue(s) %s: their runs do not progress, and are read from the state "+
			"they published in Temporal; start a worker that serves them", strings.Join(h.Unserved, ", ")))
	}
	h.Message = strings.Join(append(msgs, queues...), "; ")
	return h
}

// TemporalHealth reports the Temporal connection.
type TemporalHealth struct {
	// Address is the frontend host:port.
	Address string `json:"address"`
	// Namespace is where runs live.
	Namespace string `json:"namespace"`
	// Embedded reports an in-process server.
	Embedded bool `json:"embedded"`
	// Reachable reports whether it answered the health check.
	Reachable bool `json:"reachable"`
	// Error is the failed check's error.
	Error string `json:"error,omitempty"`
}

// SearchAttributesHealth names the missing run search attributes and how
// to create them.
type SearchAttributesHealth struct {
	// Missing are the attributes the namespace lacks.
	Missing []string `json:"missing"`
	// Message says what is missing and gives the commands below.
	Message string `json:"message"`
	// Commands create them: the Temporal CLI's (self-hosted) and tcld's
	// (Temporal Cloud).
	Commands []string `json:"commands"`
}

func (a *App) healthz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), healthTimeout)
	defer cancel()
	h := Health{Status: "ok", Temporal: TemporalHealth{
		Address: a.TemporalAddress, Namespace: a.Namespace, Embedded: a.embedded(), Reachable: true,
	}}
	code := http.StatusOK
	if _, err := a.Client.CheckHealth(ctx, &client.CheckHealthRequest{}); err != nil {
		h.Status, h.Temporal.Reachable, h.Temporal.Error = "unavailable", false, err.Error()
		code = http.StatusServiceUnavailable
	} else if missing := a.missingSearchAttributes(ctx); missing != nil {
		h.Status = "unhealthy"
		h.SearchAttributes = &SearchAttributesHealth{
			Missing: missing.Names, Message: missing.Error(),
			Commands: []string{missing.CreateCommand(), missing.CloudCommand()},
		}
		code = http.StatusServiceUnavailable
	} else if a.unserved != nil {
		unserved, err := a.unserved(ctx)
		if err != nil {
			a.Logger.Debug("/healthz: check the task queues' workers", zap.Error(err))
		}
		if h.Workers = workersHealth(unserved); h.Workers != nil {
			h.Status = "degraded"
		}
	}
	if a.issuers != nil {
		if down := a.issuers(); len(down) > 0 {
			if h.Status == "ok" {
				h.Status = "degraded"
			}
			h.Issuers = &IssuersHealth{Unreachable: down, Message: "the metadata or keys of these OAuth issuers could not be " +
				"fetched: their tokens are refused until they are (the server keeps retrying)"}
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(h)
}

// missingSearchAttributes returns the recorded search attribute failure
// when it is a missing one, checking again first when the last check
// failed more than recheckAfter ago (an operator may have added them).
func (a *App) missingSearchAttributes(ctx context.Context) *runs.MissingSearchAttributesError {
	a.saMu.Lock()
	stale := a.saErr != nil && time.Since(a.saChecked) > recheckAfter
	a.saMu.Unlock()
	if stale {
		a.checkSearchAttributes(ctx)
	}
	a.saMu.Lock()
	defer a.saMu.Unlock()
	var missing *runs.MissingSearchAttributesError
	if errors.As(a.saErr, &missing) {
		return missing
	}
	return nil
}
