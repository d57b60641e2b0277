package mcpmount

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/activities"
	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/workflows"
)

// These tests prove that the progress a run reports from inside, a
// workflow step's counts (workflows.ReportProgress) and an activity's
// (activities.ReportProgress), reaches the agent: a blocking call's
// notifications/progress (progress and total), a listener's
// notifications/tasks and tasks/get (the status message), never tool
// content. The tool "counted" holds at each count until the test has seen
// it, so nothing depends on timing.

// gates are the points where counted's activities wait until the test
// opens them, by name.
type gates struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

func (g *gates) get(name string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.ch == nil {
		g.ch = map[string]chan struct{}{}
	}
	if g.ch[name] == nil {
		g.ch[name] = make(chan struct{})
	}
	return g.ch[name]
}

// open lets the activity waiting at name go on (once; later calls do
// nothing).
func (g *gates) open(name string) {
	c := g.get(name)
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-c:
	default:
		close(c)
	}
}

// countedActivities are counted's activities.
type countedActivities struct{ gates *gates }

// Hold waits at gate name.
func (a *countedActivities) Hold(ctx context.Context, name string) error {
	select {
	case <-a.gates.get(name):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Copy reports 1 of 2 from inside the activity, then waits at gate name.
func (a *countedActivities) Copy(ctx context.Context, name string) error {
	if err := activities.ReportProgress(ctx, activities.Progress{Step: "copy", Done: 1, Total: 2}); err != nil {
		return err
	}
	return a.Hold(ctx, name)
}

// countedInput names counted's gates; it is an argument, which no status
// message may show.
type countedInput struct {
	Gate string `json:"gate"`
}

// countedOutput is counted's result.
type countedOutput struct {
	Done bool `json:"done"`
}

// counted reports 2 of 3 in its step "count" and waits at gate
// "<gate>/count", then reports 3 of 3; in its step "copy" an activity
// reports 1 of 2 and waits at gate "<gate>/copy".
func counted(ctx workflow.Context, in countedInput) (countedOutput, error) {
	var a *countedActivities // names the activities
	ctx = workflow.WithActivityOptions(ctx, workflow.ActivityOptions{StartToCloseTimeout: 2 * time.Minute})
	_, err := workflows.Step(ctx, "count", func(ctx workflow.Context) (struct{}, error) {
		if err := workflows.ReportProgress(ctx, 2, 3); err != nil {
			return struct{}{}, err
		}
		if err := workflow.ExecuteActivity(ctx, a.Hold, in.Gate+"/count").Get(ctx, nil); err != nil {
			return struct{}{}, err
		}
		return struct{}{}, workflows.ReportProgress(ctx, 3, 3)
	})
	if err != nil {
		return countedOutput{}, err
	}
	_, err = workflows.Step(ctx, "copy", func(ctx workflow.Context) (struct{}, error) {
		return struct{}{}, workflow.ExecuteActivity(ctx, a.Copy, in.Gate+"/copy").Get(ctx, nil)
	})
	return countedOutput{Done: err == nil}, err
}

// Status messages counted's run shows at its gates.
const (
	msgCount = "the run is running: step count (2/3)"
	msgCopy  = "the run is running: step copy (1/2)"
)

// newCountedStack is a stack whose catalog serves counted alone, on its
// own worker; its keep-alive is short, so that notifications without a new
// count come between the counts.
func newCountedStack(t *testing.T) (*stack, *gates) {
	t.Helper()
	g := &gates{}
	s := newStackWith(t, nil, "", func(o *Options) func(*Mount) {
		env := testenv.Temporal(t)
		tq := testenv.UniqueTaskQueue(t)
		reg, err := workflows.NewRegistry([]workflows.Tool{
			workflows.NewTool("counted", "Reports its progress in counts.", counted),
		}, &countedActivities{gates: g})
		if err != nil {
			t.Fatal(err)
		}
		env.NewWorker(t, tq, reg.Register)
		o.Runs = runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
		o.Catalog = staticCatalog(t, reg.Specs()...)
		o.KeepAlive = 100 * time.Millisecond
		return nil
	})
	return s, g
}

// countsIn matches the counts a status message names.
var countsIn = regexp.MustCompile(`\((\d+)/(\d+)\)$`)

// TestProgressCountsBlocking: a blocking call's notifications/progress
// carry the counts the run reports, from its workflow and from its
// activity: while a step counts, total − progress is the step's remaining
// work (less than one unit below it after a keep-alive), and progress
// increases with every notification.
func TestProgressCountsBlocking(t *testing.T) {
	s, g := newCountedStack(t)
	gate := "secret-gate-" + testenv.UniqueID("")
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	cs := sessionClient(t, s, ProtocolVersion, nil, func(r *mcp.ProgressNotificationClientRequest) {
		mu.Lock()
		got = append(got, r.Params)
		mu.Unlock()
		switch r.Params.Message {
		case msgCount:
			g.open(gate + "/count")
		case msgCopy:
			g.open(gate + "/copy")
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	params := &mcp.CallToolParams{Name: "counted", Arguments: map[string]any{"gate": gate}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(ctx, params)
	if err != nil || res.IsError {
		t.Fatalf("tools/call = %+v, %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	last, seen := -1.0, map[string]bool{}
	for _, n := range got {
		if n.Progress <= last || strings.Contains(n.Message, gate) {
			t.Fatalf("notification %+v after progress %v", n, last)
		}
		last = n.Progress
		m := countsIn.FindStringSubmatch(n.Message)
		if m == nil {
			continue
		}
		seen[n.Message] = true
		done, _ := strconv.ParseFloat(m[1], 64)
		total, _ := strconv.ParseFloat(m[2], 64)
		if left := n.Total - n.Progress; n.Total == 0 || left > total-done || left <= total-done-1 {
			t.Fatalf("notification %+v: progress/total do not leave the step's %v of %v", n, total-done, total)
		}
	}
	if !seen[msgCount] || !seen[msgCopy] {
		t.Fatalf("counted messages seen %v, want %q and %q", seen, msgCount, msgCopy)
	}
}

// TestProgressCountsTasks: a task's progress reaches tasks/get and a
// subscriptions/listen listener's notifications/tasks as its status
// message: the workflow step's counts, then the activity's.
func TestProgressCountsTasks(t *testing.T) {
	s, g := newCountedStack(t)
	t.Run("tasks/get", func(t *testing.T) {
		c := s.client(t, "", tasksCaps())
		gate := "secret-gate-" + testenv.UniqueID("")
		id := callTool(t, c, "counted", map[string]any{"gate": gate})["taskId"].(string)
		for _, step := range []struct{ msg, gate string }{{msgCount, gate + "/count"}, {msgCopy, gate + "/copy"}} {
			waitTask(t, c, id, func(r map[string]any) bool {
				if m, _ := r["statusMessage"].(string); strings.Contains(m, gate) {
					t.Fatalf("statusMessage %q holds the arguments", m)
				}
				return r["statusMessage"] == step.msg
			})
			g.open(step.gate)
		}
		waitTask(t, c, id, status("completed"))
	})
	t.Run("listen", func(t *testing.T) {
		c := s.client(t, "", tasksCaps())
		gate := "secret-gate-" + testenv.UniqueID("")
		id := callTool(t, c, "counted", map[string]any{"gate": gate})["taskId"].(string)
		st := openListen(t, s.addr(), "", "listen:p", []string{id}, tasksCaps())
		if ack := st.next(t); ack["method"] != "notifications/subscriptions/acknowledged" {
			t.Fatalf("ack = %v", ack)
		}
		var messages []string
		for {
			msg := st.next(t)
			if msg == nil {
				t.Fatalf("the stream ended before the listen result (messages %q)", messages)
			}
			if _, ok := msg["result"]; ok {
				break
			}
			p, _ := msg["params"].(map[string]any)
			m, _ := p["statusMessage"].(string)
			if msg["method"] != "notifications/tasks" || strings.Contains(m, gate) {
				t.Fatalf("notification = %v", msg)
			}
			messages = append(messages, m)
			switch m {
			case msgCount:
				g.open(gate + "/count")
			case msgCopy:
				g.open(gate + "/copy")
			}
		}
		joined := strings.Join(messages, "|")
		if !strings.Contains(joined, msgCount+"|") || !strings.Contains(joined, msgCopy+"|") {
			t.Fatalf("listener's status messages %q, want %q then %q", messages, msgCount, msgCopy)
		}
	})
}
