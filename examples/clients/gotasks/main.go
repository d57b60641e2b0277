// Command gotasks is a client of the Tasks flow (MCP 2026-07-28 with the
// extension io.modelcontextprotocol/tasks) on nothing but net/http and
// encoding/json. Against the stock server it calls publish_report, which
// asks for approval; polls tasks/get at the pollIntervalMs the server gives;
// answers with an action the question does not offer (refused with -32602:
// the question stays open), then approves; then starts delay and cancels it.
//
//	go run ./examples/clients/gotasks [http://127.0.0.1:8080/mcp]
//
// Set OPENWOP_API_KEY when the server has API keys configured.
package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"time"
)

// meta goes into the params of every request: the protocol version and the
// client's capabilities, the Tasks extension among them.
const meta = `{"io.modelcontextprotocol/protocolVersion":"2026-07-28",
 "io.modelcontextprotocol/clientCapabilities":{"elicitation":{},"extensions":{"io.modelcontextprotocol/tasks":{}}}}`

// task is what tools/call answers when it starts a task, and what tasks/get answers.
type task struct {
	TaskID, Status, StatusMessage string
	PollIntervalMs                int
	InputRequests                 map[string]struct{ Params struct{ Message string } } // open questions by key
	Result                        *struct{ Content []struct{ Text string } }           // once completed
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int
	Message string
}

func (e *rpcError) Error() string { return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message) }

// client sends each request as one POST, its method and target (tool name
// or task id) also in headers. Listing application/json first in Accept
// asks for a JSON answer rather than an event stream.
type client struct{ url, token string }

func (c *client) call(ctx context.Context, method, target string, params map[string]any, out any) error {
	params["_meta"] = json.RawMessage(meta)
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header = http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json, text/event-stream"},
		"Mcp-Protocol-Version": {"2026-07-28"}, "Mcp-Method": {method}, "Mcp-Name": {target}}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var msg struct {
		Result json.RawMessage
		Error  *rpcError
	}
	if err := json.NewDecoder(resp.Body).Decode(&msg); err != nil {
		return fmt.Errorf("%s: HTTP %s: %w", method, resp.Status, err)
	} else if msg.Error != nil {
		return fmt.Errorf("%s: %w", method, msg.Error)
	}
	return json.Unmarshal(msg.Result, out)
}

// wait polls tasks/get at the task's pollIntervalMs until the task ends,
// calling answer with each open question first.
func (c *client) wait(ctx context.Context, t *task, answer func(key, message string) error) error {
	for t.Status == "working" || t.Status == "input_required" {
		for key, q := range t.InputRequests {
			if err := answer(key, q.Params.Message); err != nil {
				return err
			}
		}
		time.Sleep(time.Duration(t.PollIntervalMs) * time.Millisecond)
		if err := c.call(ctx, "tasks/get", t.TaskID, map[string]any{"taskId": t.TaskID}, t); err != nil {
			return err
		}
		fmt.Printf("task %s (%s), pollIntervalMs %d\n", t.Status, t.StatusMessage, t.PollIntervalMs)
	}
	return nil
}

func run(ctx context.Context, c *client) error {
	// 1. Call a tool that asks a question: its answer is a task.
	var t task
	args := map[string]any{"title": "Q3", "topic": "sales"}
	if err := c.call(ctx, "tools/call", "publish_report", map[string]any{"name": "publish_report", "arguments": args}, &t); err != nil {
		return err
	}
	fmt.Printf("called publish_report: task %s %s\n", t.TaskID, t.Status)
	// 2. Answer it with tasks/update: first with an action it does not offer, then "accept".
	action := "maybe"
	err := c.wait(ctx, &t, func(key, message string) error {
		fmt.Printf("asked: %s; answering %s\n", message, action)
		answers := map[string]any{key: map[string]any{"action": "accept", "content": map[string]any{"action": action}}}
		err := c.call(ctx, "tasks/update", t.TaskID, map[string]any{"taskId": t.TaskID, "inputResponses": answers}, &struct{}{})
		if rerr := (*rpcError)(nil); errors.As(err, &rerr) && rerr.Code == -32602 && action == "maybe" {
			fmt.Printf("refused: %d %s\n", rerr.Code, rerr.Message) // nothing was signalled: answer again
			action = "accept"
			return nil
		}
		return err
	})
	if err != nil {
		return err
	} else if t.Status != "completed" || t.Result == nil || len(t.Result.Content) == 0 {
		return fmt.Errorf("publish_report ended %s", t.Status)
	}
	fmt.Printf("completed: %s\n", t.Result.Content[0].Text)

	// 3. Start a long run and cancel it with tasks/cancel.
	var d task
	if err := c.call(ctx, "tools/call", "delay", map[string]any{"name": "delay", "arguments": map[string]any{"delayMs": 600000}}, &d); err != nil {
		return err
	}
	fmt.Printf("called delay: task %s %s; cancelling it\n", d.TaskID, d.Status)
	if err := c.call(ctx, "tasks/cancel", d.TaskID, map[string]any{"taskId": d.TaskID}, &struct{}{}); err != nil {
		return err
	}
	if err := c.wait(ctx, &d, func(string, string) error { return errors.New("delay asked a question") }); err != nil {
		return err
	}
	fmt.Printf("delay ended %s\n", d.Status)
	if d.Status != "cancelled" {
		return errors.New("delay was not cancelled")
	}
	return nil
}

func main() {
	flag.Parse()
	c := &client{url: cmp.Or(flag.Arg(0), "http://127.0.0.1:8080/mcp"), token: os.Getenv("OPENWOP_API_KEY")}
	if err := run(context.Background(), c); err != nil {
		log.Fatal(err)
	}
}
