package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"

	"github.com/openwop/temporal-mcp/internal/testing/visibility"
	"github.com/openwop/temporal-mcp/signals"
)

var deleted = regexp.MustCompile(`Deleted ([^"\\ ]+)\.`)

// audit lists every workflow and compares with what the clients hold.
func audit(addr string, clients []*mcpClient, st *stats, load time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c, err := client.DialContext(ctx, client.Options{HostPort: addr, Logger: quietLogger{}})
	if err != nil {
		return err
	}
	defer c.Close()
	held := map[string]string{} // run id -> intent
	intents, unfinished := 0, 0
	for _, cl := range clients {
		for id, in := range cl.runs {
			held[id] = in
		}
		intents += cl.intents
		unfinished += cl.unfinished
	}
	all, err := settledRuns(ctx, c, clients)
	if err != nil {
		return err
	}
	f := compare(ctx, c, held, all)
	fmt.Printf("lifecycles started %d, unfinished %d (%.1f/s over the load phase); runs held by clients %d, workflows in Temporal %d (cancelled, held by no client: %d)\n",
		intents, unfinished, float64(intents)/load.Seconds(), len(held), len(all), f.cancelledUnheld)
	fivexx := st.report()
	fmt.Printf("lost %d, duplicated %d, orphaned %d, 5xx %d\n", len(f.lost), len(f.duplicated), len(f.orphaned), fivexx)
	for _, l := range [][]string{f.lost, f.duplicated, f.orphaned} {
		for i, x := range l {
			if i == 10 {
				fmt.Printf("  ... %d more\n", len(l)-10)
				break
			}
			fmt.Println("  ", x)
		}
	}
	if len(f.lost)+len(f.duplicated)+len(f.orphaned)+fivexx+unfinished > 0 {
		return errors.New("targets missed")
	}
	return nil
}

// settledRuns lists every run with its status. Visibility follows a run's
// close a moment later (the rule of internal/testing/visibility): it lists
// again while a run a client saw finish still reads running, for at most a
// minute, then returns the last listing as it is (the audit then reports
// such a run as lost).
func settledRuns(ctx context.Context, c client.Client, clients []*mcpClient) (map[string]enumspb.WorkflowExecutionStatus, error) {
	var all map[string]enumspb.WorkflowExecutionStatus
	err := visibility.Await(ctx, time.Minute, func(ctx context.Context) error {
		var err error
		if all, err = listRuns(ctx, c); err != nil {
			return err
		}
		behind := 0
		for _, cl := range clients {
			for id, final := range cl.finals {
				if final != "input_required" && all[id] == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING {
					behind++
				}
			}
		}
		if behind > 0 {
			return fmt.Errorf("%d runs that clients saw finish still listed running", behind)
		}
		return nil
	})
	if errors.Is(err, visibility.ErrNotVisible) && all != nil {
		return all, nil
	}
	return all, err
}

// findings is what the audit found wrong.
type findings struct {
	lost, duplicated, orphaned []string
	cancelledUnheld            int
}

// compare holds the runs the clients hold (run id -> intent) against every
// run in Temporal: a held run missing or still running is lost, a run no
// client holds is orphaned unless it was cancelled (its request was
// dropped), and an intent served by more than one completed run is
// duplicated.
func compare(ctx context.Context, c client.Client, held map[string]string, all map[string]enumspb.WorkflowExecutionStatus) findings {
	var f findings
	completedBy := map[string]int{} // intent -> completed runs
	for id, in := range held {
		status, ok := all[id]
		switch {
		case !ok:
			f.lost = append(f.lost, id+" (missing)")
		case status == enumspb.WORKFLOW_EXECUTION_STATUS_RUNNING:
			f.lost = append(f.lost, id+" (still running)")
		case status == enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			completedBy[in]++
		}
	}
	for id, status := range all {
		if _, ok := held[id]; ok {
			continue
		}
		switch status {
		case enumspb.WORKFLOW_EXECUTION_STATUS_CANCELED:
			f.cancelledUnheld++
			continue
		case enumspb.WORKFLOW_EXECUTION_STATUS_COMPLETED:
			// Which intent did it serve?
			var out any
			if err := c.GetWorkflow(ctx, id, "").Get(ctx, &out); err == nil {
				b, _ := json.Marshal(out)
				if m := deleted.FindSubmatch(b); m != nil {
					completedBy[string(m[1])]++
				}
			}
		}
		f.orphaned = append(f.orphaned, id+" ("+status.String()+")")
	}
	for in, n := range completedBy {
		if n > 1 {
			f.duplicated = append(f.duplicated, fmt.Sprintf("%s x%d", in, n))
		}
	}
	return f
}

// report prints the request statistics and returns the number of 5xx
// answers.
func (st *stats) report() (fivexx int) {
	st.mu.Lock()
	lat := slices.Clone(st.latencies)
	codes := st.status
	transport, overload := st.transport, st.overload
	byMethod, samples := st.byMethod, st.samples
	perMethod := map[string][]time.Duration{}
	for m, l := range st.methodLat {
		perMethod[m] = slices.Clone(l)
	}
	st.mu.Unlock()
	slices.Sort(lat)
	var methods []string
	for m, l := range perMethod {
		slices.Sort(l)
		methods = append(methods, fmt.Sprintf("%s p50 %s p99 %s", m, percentile(l, 0.5), percentile(l, 0.99)))
	}
	slices.Sort(methods)
	for code, n := range codes {
		if code >= 500 {
			fivexx += n
		}
	}
	fmt.Printf("requests %d: HTTP statuses %v, transport errors %d, 503 overloaded %d; latency p50 %s p99 %s\n",
		len(lat)+fivexx, codes, transport, overload, percentile(lat, 0.50), percentile(lat, 0.99))
	fmt.Printf("latency by method: %s\n", strings.Join(methods, "; "))
	fmt.Printf("answers by method and HTTP status (0: none, the connection failed): %v\n", byMethod)
	for k, v := range samples {
		fmt.Printf("  first %s answer: %.300s\n", k, v)
	}
	return fivexx
}

// percentile returns the p-th percentile of the sorted latencies,
// rounded to the millisecond (0 for none).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))].Round(time.Millisecond)
}

// listRuns lists every run of the development-mode tenant (the catalog's
// own workflows carry no tenant) with its status.
func listRuns(ctx context.Context, c client.Client) (map[string]enumspb.WorkflowExecutionStatus, error) {
	all := map[string]enumspb.WorkflowExecutionStatus{}
	var token []byte
	for {
		resp, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: "default", PageSize: 1000,
			NextPageToken: token, Query: signals.SearchAttrTenant + " = 'anon:local'"})
		if err != nil {
			return nil, fmt.Errorf("list workflows: %w", err)
		}
		for _, e := range resp.GetExecutions() {
			all[e.GetExecution().GetWorkflowId()] = e.GetStatus()
		}
		if token = resp.GetNextPageToken(); len(token) == 0 {
			return all, nil
		}
	}
}

// quietLogger drops the SDK's logs.
type quietLogger struct{}

func (quietLogger) Debug(string, ...any) {}
func (quietLogger) Info(string, ...any)  {}
func (quietLogger) Warn(string, ...any)  {}
func (quietLogger) Error(string, ...any) {}
