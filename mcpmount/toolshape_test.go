package mcpmount

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/openwop/temporal-mcp/signals"
)

// shapeOf returns the outputSchema and annotations of the tool named name
// in a tools/list result's tools, re-encoded as JSON.
func shapeOf(t *testing.T, tools any, name string) (schema, annotations map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(tools)
	var list []struct {
		Name         string         `json:"name"`
		OutputSchema map[string]any `json:"outputSchema"`
		Annotations  map[string]any `json:"annotations"`
	}
	if err := json.Unmarshal(raw, &list); err != nil {
		t.Fatalf("decode tools %s: %v", raw, err)
	}
	for _, tl := range list {
		if tl.Name == name {
			return tl.OutputSchema, tl.Annotations
		}
	}
	t.Fatalf("no tool %q in %s", name, raw)
	return nil, nil
}

// wantShape fails unless the listed tools show publish_report's derived
// output schema and its annotations, and delay's read-only hint.
func wantShape(t *testing.T, tools any) {
	t.Helper()
	schema, ann := shapeOf(t, tools, "publish_report")
	req, _ := json.Marshal(schema["required"])
	if schema["type"] != "object" || string(req) != `["reportId","published","decision","summary"]` {
		t.Errorf("publish_report outputSchema = %v", schema)
	}
	if ann["title"] != "Publish a report" || ann["destructiveHint"] != false || ann["openWorldHint"] != false {
		t.Errorf("publish_report annotations = %v", ann)
	}
	if _, ann := shapeOf(t, tools, "delay"); ann["readOnlyHint"] != true || ann["title"] != "Wait" {
		t.Errorf("delay annotations = %v", ann)
	}
	// greet returns a string: its outputs are {"result": string}.
	if schema, _ := shapeOf(t, tools, "greet"); schema["required"] == nil {
		t.Errorf("greet outputSchema = %v, want {result}", schema)
	}
}

// TestToolsListShape: every dialect's tools/list shows each tool's output
// schema and annotations: the 2026-07-28 handlers, the stateless
// session-dialect requests of 2025-11-25 (the Tasks dialect) and 2025-06-18,
// and a go-sdk client session.
func TestToolsListShape(t *testing.T) {
	s := newStack(t, nil, "")
	t.Run(ProtocolVersion, func(t *testing.T) {
		res := wantResult(t, s.client(t, "", map[string]any{}).call("tools/list", nil, nil))
		wantShape(t, res["tools"])
	})
	for _, version := range []string{"2025-11-25", "2025-06-18"} {
		t.Run("stateless "+version, func(t *testing.T) {
			c := &sessionlessClient{t: t, url: s.URL + "/mcp", version: version}
			res := wantResult(t, c.call("tools/list", nil))
			wantShape(t, res["tools"])
		})
	}
	t.Run("go-sdk session 2025-11-25", func(t *testing.T) {
		cs := sessionClient(t, s, "2025-11-25", nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		wantShape(t, res.Tools)
		for _, tl := range res.Tools {
			if tl.Name == "delay" && (tl.Annotations == nil || !tl.Annotations.ReadOnlyHint) {
				t.Errorf("the SDK decoded delay's annotations as %+v", tl.Annotations)
			}
		}
	})
}

// mismatchedCatalog is the stack's catalog with greet and slow_compute
// declaring an output schema their results do not match (a required
// "greeting"), as a tools file could declare for a workflow in another
// language.
func mismatchedCatalog(t *testing.T) func(o *Options) func(*Mount) {
	return func(o *Options) func(*Mount) {
		tools, err := o.Catalog.Tools(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var specs []signals.ToolSpec
		for _, tl := range tools {
			spec := tl.Spec()
			if spec.Name == "greet" || spec.Name == "slow_compute" {
				spec.OutputSchema = json.RawMessage(`{"type":"object","properties":{"greeting":{"type":"string"}},"required":["greeting"]}`)
			}
			specs = append(specs, spec)
		}
		o.Catalog = staticCatalog(t, specs...)
		return nil
	}
}

// wantMismatch fails unless res is a tool error naming the output schema
// and the missing property.
func wantMismatch(t *testing.T, res map[string]any) {
	t.Helper()
	if res["isError"] != true || res["structuredContent"] != nil {
		t.Fatalf("result = %v, want a tool error without structuredContent", res)
	}
	if msg := text(t, res); !strings.Contains(msg, "output schema") || !strings.Contains(msg, "greeting") {
		t.Fatalf("result text %q does not name the output schema and greeting", msg)
	}
}

// TestOutputSchemaMismatch: a completed run whose result does not match
// its tool's output schema is answered as a tool error naming the
// mismatch, never as a silent success: a blocking call and a task in
// 2026-07-28, the 2025-11-25 task dialect and a go-sdk session.
func TestOutputSchemaMismatch(t *testing.T) {
	s := newStackWith(t, nil, "", mismatchedCatalog(t))
	t.Run("2026 blocking", func(t *testing.T) {
		res := wantResult(t, s.client(t, "", map[string]any{}).call("tools/call",
			map[string]any{"name": "greet", "arguments": map[string]any{"name": "Ada"}}, nil))
		wantMismatch(t, res)
	})
	t.Run("2026 task", func(t *testing.T) {
		c := s.client(t, "", tasksCaps())
		created := wantResult(t, c.call("tools/call", map[string]any{"name": "slow_compute", "arguments": map[string]any{"seconds": 0}}, nil))
		id, _ := created["taskId"].(string)
		if id == "" {
			t.Fatalf("tools/call = %v, want a task", created)
		}
		var got map[string]any
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if got = wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil)); got["status"] != "working" {
				break
			}
		}
		if got["status"] != "completed" {
			t.Fatalf("tasks/get = %v, want completed", got)
		}
		wantMismatch(t, got["result"].(map[string]any))
	})
	t.Run("2025-11-25 task", func(t *testing.T) {
		c := &sessionlessClient{t: t, url: s.URL + "/mcp", version: "2025-11-25"}
		tk := c.createTask("slow_compute", map[string]any{"seconds": 0})
		res := wantResult(t, c.call("tasks/result", map[string]any{"taskId": tk["taskId"]}))
		wantMismatch(t, res)
	})
	t.Run("go-sdk session", func(t *testing.T) {
		cs := sessionClient(t, s, "2025-11-25", nil, nil)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
		if err != nil {
			t.Fatal(err)
		}
		if msg := resultText(t, res); !res.IsError || !strings.Contains(msg, "greeting") {
			t.Fatalf("result = %+v (%q), want a tool error naming greeting", res, msg)
		}
	})
	// A tool whose result matches its schema still answers it.
	res := wantResult(t, s.client(t, "", map[string]any{}).call("tools/call",
		map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 0}}, nil))
	if sc, _ := res["structuredContent"].(map[string]any); res["isError"] == true || sc["sleptMs"] != float64(0) {
		t.Errorf("delay = %v, want its result", res)
	}
}

// TestProgressStepName: while a run works in a Step, its status message
// names the step's declared name, never its arguments: in tasks/get of a
// task and in notifications/progress of a blocking call.
func TestProgressStepName(t *testing.T) {
	s := newStackWith(t, nil, "", func(o *Options) func(*Mount) {
		o.KeepAlive = 100 * time.Millisecond
		return nil
	})
	const want = "the run is running: step delay"
	t.Run("tasks/get", func(t *testing.T) {
		c := s.client(t, "", tasksCaps())
		created := wantResult(t, c.call("tools/call", map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 4321}}, nil))
		id, _ := created["taskId"].(string)
		var msg any
		for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline) && msg != want; time.Sleep(50 * time.Millisecond) {
			msg = wantResult(t, c.call("tasks/get", map[string]any{"taskId": id}, nil))["statusMessage"]
			if m, _ := msg.(string); strings.Contains(m, "4321") {
				t.Fatalf("statusMessage %q holds the arguments", m)
			}
		}
		if msg != want {
			t.Fatalf("statusMessage = %v, want %q", msg, want)
		}
	})
	t.Run("notifications/progress", func(t *testing.T) {
		var mu sync.Mutex
		var got []string
		cs := sessionClient(t, s, ProtocolVersion, nil, func(r *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			got = append(got, r.Params.Message)
			mu.Unlock()
		})
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		params := &mcp.CallToolParams{Name: "delay", Arguments: map[string]any{"delayMs": 1234}}
		params.SetProgressToken("tok")
		if _, err := cs.CallTool(ctx, params); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !slices.Contains(got, want) {
			t.Fatalf("progress messages %q, want one %q", got, want)
		}
		for _, m := range got {
			if strings.Contains(m, "1234") {
				t.Fatalf("progress message %q holds the arguments", m)
			}
		}
	})
}
