package mcpmount

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/internal/testing/testenv"
	"github.com/openwop/temporal-mcp/restapi"
	"github.com/openwop/temporal-mcp/runs"
	"github.com/openwop/temporal-mcp/signals/runid"
	"github.com/openwop/temporal-mcp/workflows"
)

// bigInput is the input of the big_result test tool.
type bigInput struct {
	TextBytes int `json:"textBytes"`
	DataBytes int `json:"dataBytes"`
}

// bigOutput is its output: Data is the structuredContent's bulk, the text
// is bigText(TextBytes).
type bigOutput struct {
	Data      string `json:"data"`
	TextBytes int    `json:"textBytes"`
}

// ResultText implements workflows.ResultTexter.
func (o bigOutput) ResultText() string { return bigText(o.TextBytes) }

// bigText is n bytes (at most) of numbered lines with characters of two
// and three bytes, so that a page cut in the middle of one shows.
func bigText(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "line %06d: naïve café ✓ %d\n", i, i*7)
	}
	s := b.String()
	for len(s) > n {
		_, size := lastRune(s)
		s = s[:len(s)-size]
	}
	return s
}

func lastRune(s string) (rune, int) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return rune(s[i]), len(s) - i
		}
	}
	return 0, 1
}

// bigResult returns the result its input asks for.
func bigResult(_ workflow.Context, in bigInput) (bigOutput, error) {
	return bigOutput{Data: strings.Repeat("d", in.DataBytes), TextBytes: in.TextBytes}, nil
}

// resultStack is the mount and the REST API over one run service on the
// embedded Temporal server, whose worker serves big_result; alice (ka)
// and bob (kb) are of tenant acme, eve (ke) of tenant globex.
type resultStack struct {
	mcp, rest *httptest.Server
}

// limitedResult is limited_result's own result limit, below the server's.
const limitedResult = 10_000

func newResultStack(t *testing.T) *resultStack {
	t.Helper()
	env := testenv.Temporal(t)
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("big_result", "returns a result of the size asked for", bigResult),
		workflows.NewTool("limited_result", "returns a result of the size asked for, over its own limit", bigResult,
			workflows.WithResultLimit(limitedResult)),
	})
	if err != nil {
		t.Fatal(err)
	}
	tq := testenv.UniqueTaskQueue(t)
	env.NewWorker(t, tq, reg.Register)
	svc := runs.New(env.Client, env.Logger, runs.Options{TaskQueue: tq, Namespace: env.Namespace})
	keys := keysFor(t, "ka=acme:alice,kb=acme:bob,ke=globex:eve")
	cat := staticCatalog(t, reg.Specs()...)
	m, err := New(Options{Runs: svc, Catalog: cat, Logger: env.Logger, Authenticate: keys.Authenticate, PollInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	api, err := restapi.New(restapi.Options{Runs: svc, Authenticate: keys.Authenticate, Catalog: cat})
	if err != nil {
		t.Fatal(err)
	}
	s := &resultStack{mcp: httptest.NewServer(m), rest: httptest.NewServer(api)}
	t.Cleanup(s.mcp.Close)
	t.Cleanup(s.rest.Close)
	return s
}

func (s *resultStack) client(t *testing.T, key string, caps map[string]any) *client {
	return &client{t: t, url: s.mcp.URL, key: key, caps: caps}
}

// resultBlocks decodes a tool result's content blocks.
func resultBlocks(t *testing.T, res map[string]any) []map[string]any {
	t.Helper()
	raw, _ := json.Marshal(res["content"])
	var blocks []map[string]any
	if err := json.Unmarshal(raw, &blocks); err != nil {
		t.Fatalf("content %s: %v", raw, err)
	}
	return blocks
}

// wantLinked fails unless res is the head of a result whose text is
// bigText(textBytes) and whose structuredContent was dataBytes of data,
// with a resource_link to each, and returns the links by name.
func wantLinked(t *testing.T, res map[string]any, textBytes int) map[string]map[string]any {
	t.Helper()
	blocks := resultBlocks(t, res)
	if _, ok := res["structuredContent"]; ok {
		t.Fatalf("result has structuredContent over the limit; want it linked")
	}
	if len(blocks) != 4 || blocks[0]["type"] != "text" || blocks[1]["type"] != "text" {
		t.Fatalf("content = %d blocks %v..., want head, note and two resource_links", len(blocks), blocks[len(blocks)-1])
	}
	head, _ := blocks[0]["text"].(string)
	if len(head) > DefaultResultLimit || len(head) < DefaultResultLimit-4 || !strings.HasPrefix(bigText(textBytes), head) {
		t.Fatalf("head is %d bytes, want the first %d of the text", len(head), DefaultResultLimit)
	}
	links := map[string]map[string]any{}
	for _, b := range blocks[2:] {
		if b["type"] != "resource_link" || b["uri"] == nil || b["mimeType"] == nil {
			t.Fatalf("block %v, want a resource_link", b)
		}
		if _, ok := b["text"]; ok {
			t.Fatalf("resource_link %v carries text", b)
		}
		links[b["name"].(string)] = b
	}
	if links["result"] == nil || links["structuredContent"] == nil {
		t.Fatalf("links = %v, want result and structuredContent", links)
	}
	if note, _ := blocks[1]["text"].(string); !strings.Contains(note, links["result"]["uri"].(string)) {
		t.Fatalf("note %q does not name the result's URI", note)
	}
	if got := links["result"]["size"]; got != float64(textBytes) {
		t.Fatalf("result link size = %v, want %d", got, textBytes)
	}
	return links
}

// readAll reads the resource uri page by page, following each page's
// _meta next, and returns the pages.
func readAll(t *testing.T, c *client, uri string) []string {
	t.Helper()
	var pages []string
	for next := uri; next != ""; {
		res := wantResult(t, c.call("resources/read", map[string]any{"uri": next}, nil))
		raw, _ := json.Marshal(res["contents"])
		var contents []struct {
			URI  string `json:"uri"`
			Text string `json:"text"`
			Meta map[string]struct {
				Page, Pages int
				Next        string
			} `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &contents); err != nil || len(contents) != 1 || contents[0].URI != next {
			t.Fatalf("resources/read %s = %s, want one content of that URI", next, raw)
		}
		p := contents[0].Meta["io.openwop/page"]
		if p.Page != len(pages)+1 || len(contents[0].Text) > DefaultResultLimit {
			t.Fatalf("page %d of %d (%d bytes), want page %d of at most %d bytes", p.Page, p.Pages, len(contents[0].Text), len(pages)+1, DefaultResultLimit)
		}
		pages = append(pages, contents[0].Text)
		next = p.Next
	}
	return pages
}

// TestLargeResult: a result over the limit (1 MiB of text, 60 kB of
// structuredContent) reaches every client as its head and resource_links,
// on every path that answers a result; resources/read serves the whole in
// pages, to the run's tenant alone; the REST run record links it; a small
// result is unchanged.
func TestLargeResult(t *testing.T) {
	s := newResultStack(t)
	const textBytes, dataBytes = 1 << 20, 60_000
	args := map[string]any{"textBytes": textBytes, "dataBytes": dataBytes}
	alice := s.client(t, "ka", map[string]any{"elicitation": map[string]any{}})

	res := wantResult(t, alice.call("tools/call", map[string]any{"name": "big_result", "arguments": args}, nil))
	links := wantLinked(t, res, textBytes)
	textURI, dataURI := links["result"]["uri"].(string), links["structuredContent"]["uri"].(string)

	t.Run("resources/read returns the whole text in pages", func(t *testing.T) {
		pages := readAll(t, alice, textURI)
		if got := strings.Join(pages, ""); got != bigText(textBytes) {
			t.Fatalf("the pages reassembled are %d bytes, want the %d of the text", len(got), textBytes)
		}
		if pages[0] != resultBlocks(t, res)[0]["text"] || len(pages) != 21 {
			t.Fatalf("%d pages, the first not the head; want 21, the first the head", len(pages))
		}
	})
	t.Run("resources/read returns the structuredContent", func(t *testing.T) {
		var out bigOutput
		if err := json.Unmarshal([]byte(strings.Join(readAll(t, alice, dataURI), "")), &out); err != nil ||
			out.Data != strings.Repeat("d", dataBytes) || out.TextBytes != textBytes {
			t.Fatalf("structuredContent read back = %d bytes of data, %v", len(out.Data), err)
		}
	})
	t.Run("another subject of the tenant reads it, as it reads the run", func(t *testing.T) {
		if got := readAll(t, s.client(t, "kb", map[string]any{}), textURI); len(got) != 21 {
			t.Fatalf("bob read %d pages, want 21", len(got))
		}
	})
	t.Run("another tenant gets not found, as for no run at all", func(t *testing.T) {
		eve := s.client(t, "ke", map[string]any{})
		foreign := eve.call("resources/read", map[string]any{"uri": textURI}, nil)
		none := eve.call("resources/read", map[string]any{"uri": runid.ResultURI("globex/"+strings.Repeat("0", 26), "result")}, nil)
		wantError(t, foreign, http.StatusBadRequest, -32602)
		if foreign.Error.Message != "resource not found" || string(foreign.Error.Data) != string(none.Error.Data) || foreign.Error.Message != none.Error.Message {
			t.Fatalf("another tenant's read = %s, no run's = %s; want the same not found", foreign.Raw, none.Raw)
		}
	})
	t.Run("bad pages are refused", func(t *testing.T) {
		for _, q := range []string{"?page=0", "?page=x", "?page=22"} {
			wantError(t, alice.call("resources/read", map[string]any{"uri": textURI + q}, nil), http.StatusBadRequest, -32602)
		}
	})
	t.Run("the REST run record links the resource", func(t *testing.T) {
		taskID := strings.TrimSuffix(strings.TrimPrefix(textURI, runid.ResultURIPrefix), "/result")
		req, _ := http.NewRequest(http.MethodGet, s.rest.URL+"/runs/"+taskID, nil)
		req.Header.Set("Authorization", "Bearer ka")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		var rec struct {
			ResultResource string `json:"resultResource"`
		}
		if err := json.Unmarshal(body, &rec); err != nil || resp.StatusCode != http.StatusOK || rec.ResultResource != textURI {
			t.Fatalf("GET /runs/%s = %d %.300s, want resultResource %s", taskID, resp.StatusCode, body, textURI)
		}
	})
	t.Run("2026-07-28 tasks/get of the completed task", func(t *testing.T) {
		tasks := s.client(t, "ka", tasksCaps())
		r := wantResult(t, tasks.call("tools/call", map[string]any{"name": "big_result", "arguments": args}, nil))
		for r["resultType"] == "task" || r["status"] == "working" {
			time.Sleep(100 * time.Millisecond)
			r = wantResult(t, tasks.call("tasks/get", map[string]any{"taskId": r["taskId"]}, nil))
		}
		if inner, ok := r["result"].(map[string]any); ok {
			r = inner
		}
		wantLinked(t, r, textBytes)
	})
	t.Run("2025-11-25 tasks/result", func(t *testing.T) {
		sessionless := &sessionlessClient{t: t, url: s.mcp.URL, key: "ka", version: "2025-11-25"}
		tk := sessionless.createTask("big_result", args)
		wantLinked(t, wantResult(t, sessionless.call("tasks/result", map[string]any{"taskId": tk["taskId"]})), textBytes)
	})
	t.Run("2025-11-25 resources/read", func(t *testing.T) {
		sessionless := &sessionlessClient{t: t, url: s.mcp.URL, key: "ka", version: "2025-11-25"}
		r := wantResult(t, sessionless.call("resources/read", map[string]any{"uri": textURI + "?page=21"}))
		raw, _ := json.Marshal(r["contents"])
		var contents []struct{ Text string }
		if err := json.Unmarshal(raw, &contents); err != nil || len(contents) != 1 || !strings.HasSuffix(bigText(textBytes), contents[0].Text) ||
			r["resultType"] != nil {
			t.Fatalf("resources/read of the last page = %.300s, want the text's end", raw)
		}
		foreign := (&sessionlessClient{t: t, url: s.mcp.URL, key: "ke", version: "2025-11-25"}).call("resources/read", map[string]any{"uri": textURI})
		wantError(t, foreign, http.StatusOK, -32602)
	})
	t.Run("the companion status of the run", func(t *testing.T) {
		plain := s.client(t, "ka", map[string]any{})
		runID := strings.ReplaceAll(strings.TrimSuffix(strings.TrimPrefix(textURI, runid.ResultURIPrefix), "/result"), "~2F", "/")
		st := wantResult(t, plain.call("tools/call", map[string]any{"name": "openwop_run_status", "arguments": map[string]any{"runId": runID}}, nil))
		// The text carries the head, the structured status the note and
		// the links alone: the status stays within the limit too.
		blocks := resultBlocks(t, st)
		head, _ := blocks[0]["text"].(string)
		if len(blocks) != 1 || len(head) > DefaultResultLimit+2048 || !strings.Contains(head, bigText(textBytes)[:1000]) {
			t.Fatalf("status text is %d blocks, %d bytes; want one with the head", len(blocks), len(head))
		}
		raw, _ := json.Marshal(st["structuredContent"])
		var status struct{ Result map[string]any }
		if err := json.Unmarshal(raw, &status); err != nil || status.Result == nil || len(raw) > 4096 {
			t.Fatalf("status = %.300s (%d bytes), want the run's result's note and links", raw, len(raw))
		}
		links := resultBlocks(t, status.Result)
		if len(links) != 3 || links[1]["uri"] != textURI || links[2]["uri"] != dataURI {
			t.Fatalf("status result = %v, want the note and the two links", links)
		}
	})
	t.Run("a small result is unchanged", func(t *testing.T) {
		r := wantResult(t, alice.call("tools/call", map[string]any{"name": "big_result", "arguments": map[string]any{"textBytes": 100, "dataBytes": 10}}, nil))
		blocks := resultBlocks(t, r)
		if len(blocks) != 1 || blocks[0]["text"] != bigText(100) || r["structuredContent"] == nil {
			t.Fatalf("result = %v, want its one text block and its structuredContent", r)
		}
	})
}

// TestToolResultLimit: a tool's own result limit (workflows.WithResultLimit)
// wins over the server's: a result over it is answered with a head of that
// size, a note naming the tool's limit and resource_links, and
// resources/read serves the whole in pages of that size.
func TestToolResultLimit(t *testing.T) {
	s := newResultStack(t)
	const textBytes = 45_000
	alice := s.client(t, "ka", map[string]any{})
	res := wantResult(t, alice.call("tools/call", map[string]any{"name": "limited_result", "arguments": map[string]any{"textBytes": textBytes, "dataBytes": 0}}, nil))
	blocks := resultBlocks(t, res)
	if len(blocks) != 4 || blocks[2]["type"] != "resource_link" || blocks[2]["name"] != "result" {
		t.Fatalf("content = %d blocks, want head, note and the resource_links of the text and the structuredContent", len(blocks))
	}
	head, _ := blocks[0]["text"].(string)
	note, _ := blocks[1]["text"].(string)
	if len(head) > limitedResult || len(head) < limitedResult-4 || !strings.HasPrefix(bigText(textBytes), head) {
		t.Fatalf("head is %d bytes, want the first %d of the text", len(head), limitedResult)
	}
	if !strings.Contains(note, fmt.Sprintf("this tool's limit of %d", limitedResult)) {
		t.Fatalf("note %q does not name the tool's limit", note)
	}
	var pages []string
	for next := blocks[2]["uri"].(string); next != ""; {
		r := wantResult(t, alice.call("resources/read", map[string]any{"uri": next}, nil))
		raw, _ := json.Marshal(r["contents"])
		var contents []struct {
			Text string
			Meta map[string]struct{ Next string } `json:"_meta"`
		}
		if err := json.Unmarshal(raw, &contents); err != nil || len(contents) != 1 || len(contents[0].Text) > limitedResult {
			t.Fatalf("resources/read %s = %.200s, want one page of at most %d bytes", next, raw, limitedResult)
		}
		pages = append(pages, contents[0].Text)
		next = contents[0].Meta["io.openwop/page"].Next
	}
	if len(pages) != 5 || strings.Join(pages, "") != bigText(textBytes) {
		t.Fatalf("%d pages, %d bytes in all; want 5 pages making the whole text", len(pages), len(strings.Join(pages, "")))
	}
	// big_result, with no limit of its own, answers the same text whole.
	whole := resultBlocks(t, wantResult(t, alice.call("tools/call", map[string]any{"name": "big_result", "arguments": map[string]any{"textBytes": textBytes, "dataBytes": 0}}, nil)))
	if len(whole) != 1 || whole[0]["text"] != bigText(textBytes) {
		t.Fatalf("big_result answered %d blocks, want the whole text in one", len(whole))
	}
}

// TestResourcesListed: the mount advertises the resources capability,
// lists no resources and the one template of runs' results.
func TestResourcesListed(t *testing.T) {
	c := newTestServer(t, nil).client(t, map[string]any{})
	disc := wantResult(t, c.call("server/discover", nil, nil))
	if caps, _ := disc["capabilities"].(map[string]any); caps["resources"] == nil {
		t.Fatalf("server/discover capabilities = %v, want resources", disc["capabilities"])
	}
	if l := wantResult(t, c.call("resources/list", nil, nil)); fmt.Sprint(l["resources"]) != "[]" || l["ttlMs"] == nil || l["cacheScope"] != "public" {
		t.Fatalf("resources/list = %v, want none", l)
	}
	l := wantResult(t, c.call("resources/templates/list", nil, nil))
	if tpl := fmt.Sprint(l["resourceTemplates"]); !strings.Contains(tpl, runid.ResultURIPrefix+"{taskId}/{part}{?page}") {
		t.Fatalf("resources/templates/list = %v, want the result template", l)
	}
	sessionless := &sessionlessClient{t: t, url: c.url, version: "2025-11-25"}
	init := wantResult(t, sessionless.call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{},
		"clientInfo": map[string]any{"name": "t", "version": "0"}}))
	if caps, _ := init["capabilities"].(map[string]any); caps["resources"] == nil {
		t.Fatalf("initialize capabilities = %v, want resources", init["capabilities"])
	}
	wantError(t, c.call("resources/read", map[string]any{"uri": "file:///etc/passwd"}, nil), http.StatusBadRequest, -32602)
}
