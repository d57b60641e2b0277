package core

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/openwop/temporal-mcp/signals"
)

// TestPages: pages are at most the limit, end on a character boundary and
// reassemble the text; past the last page there is none.
func TestPages(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		limit int
		pages int
	}{
		{"empty", "", 10, 1},
		{"one page", "abc", 10, 1},
		{"exact pages", strings.Repeat("a", 30), 10, 3},
		{"multibyte cut", strings.Repeat("é✓", 20), 10, 10},
		{"no limit", strings.Repeat("a", 1000), 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var all strings.Builder
			for n := 1; ; n++ {
				p, pages, ok := page(tt.text, tt.limit, n)
				if !ok {
					if n != tt.pages+1 || pages != tt.pages {
						t.Fatalf("no page %d of %d, want %d pages", n, pages, tt.pages)
					}
					break
				}
				if tt.limit > 0 && len(p) > tt.limit || !utf8.ValidString(p) {
					t.Fatalf("page %d = %q (%d bytes), want valid UTF-8 of at most %d bytes", n, p, len(p), tt.limit)
				}
				all.WriteString(p)
			}
			if all.String() != tt.text {
				t.Fatalf("pages reassemble %q, want %q", all.String(), tt.text)
			}
		})
	}
}

// TestRunResultFits: a result within the limit is unchanged; one over it
// is its first page, a note and resource_links, its structuredContent out.
func TestRunResultFits(t *testing.T) {
	snap := func(text, structured string) signals.Snapshot {
		res := &signals.ToolResult{Content: []Content{{Type: "text", Text: text}}}
		if structured != "" {
			res.StructuredContent = json.RawMessage(structured)
		}
		return signals.Snapshot{RunID: "acme/r0123456789abcdef", Status: signals.StatusCompleted, Result: res}
	}
	tests := []struct {
		name       string
		snap       signals.Snapshot
		limit      int
		blocks     int
		structured bool
		links      []string
	}{
		{"within", snap("hello", `{"a":1}`), 100, 1, true, nil},
		{"no limit", snap(strings.Repeat("x", 500), ""), -1, 1, false, nil},
		{"text over", snap(strings.Repeat("x", 500), ""), 100, 3, false, []string{"openwop://runs/acme~2Fr0123456789abcdef/result"}},
		{"structured pushes it over", snap("hello", `{"a":"`+strings.Repeat("y", 100)+`"}`), 100, 3, false,
			[]string{"openwop://runs/acme~2Fr0123456789abcdef/structured"}},
		{"both over", snap(strings.Repeat("x", 500), `{"a":"`+strings.Repeat("y", 100)+`"}`), 100, 4, false,
			[]string{"openwop://runs/acme~2Fr0123456789abcdef/result", "openwop://runs/acme~2Fr0123456789abcdef/structured"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := RunResult(tt.snap, tt.limit)
			if len(res.Content) != tt.blocks || (res.StructuredContent != nil) != tt.structured {
				t.Fatalf("result = %d blocks, structured %t; want %d, %t", len(res.Content), res.StructuredContent != nil, tt.blocks, tt.structured)
			}
			var links []string
			for _, c := range res.Content {
				if c.Type == "resource_link" {
					links = append(links, c.URI)
				}
			}
			if strings.Join(links, " ") != strings.Join(tt.links, " ") {
				t.Fatalf("links = %v, want %v", links, tt.links)
			}
			if len(tt.links) > 0 && len(res.Content[0].Text) > tt.limit {
				t.Fatalf("head is %d bytes, over the limit %d", len(res.Content[0].Text), tt.limit)
			}
		})
	}
}

// TestParseResultURI: a result URI is read back; anything else names no
// result resource, and a bad page is an error.
func TestParseResultURI(t *testing.T) {
	tests := []struct {
		uri     string
		ok, bad bool
		page    int
	}{
		{ResultURI("acme/r0123456789abcdef", PartText, 1), true, false, 1},
		{ResultURI("acme/r0123456789abcdef", PartStructured, 3), true, false, 3},
		{"openwop://runs/acme~2Fr0123456789abcdef/other", false, false, 0},
		{"openwop://runs/acme~2Fr0123456789abcdef/result?x=1", false, false, 0},
		{"openwop://runs/acme~2Fr0123456789abcdef/result?page=0", true, true, 0},
		{"openwop://runs/acme~2Fr0123456789abcdef/result?page=1&page=2", true, true, 0},
		{"https://runs/acme~2Fr0123456789abcdef/result", false, false, 0},
		{"openwop://runs/acme~2Fr0123456789abcdef/result#x", false, false, 0},
	}
	for _, tt := range tests {
		id, _, page, ok, err := parseResultURI(tt.uri)
		if ok != tt.ok || (err != nil) != tt.bad || !tt.bad && ok && (id != "acme/r0123456789abcdef" || page != tt.page) {
			t.Errorf("parseResultURI(%q) = %q, page %d, %t, %v", tt.uri, id, page, ok, err)
		}
	}
}

// TestRunResultToolLimit: a run whose tool set a result limit
// (Snapshot.ResultLimit) is fitted to that limit, below or above the
// server's, and its note says the limit is the tool's.
func TestRunResultToolLimit(t *testing.T) {
	run := func(textBytes, own int) signals.Snapshot {
		return signals.Snapshot{RunID: "acme/r0123456789abcdef", Status: signals.StatusCompleted, ResultLimit: own,
			Result: &signals.ToolResult{Content: []Content{{Type: "text", Text: strings.Repeat("x", textBytes)}}}}
	}
	tests := []struct {
		name   string
		snap   signals.Snapshot
		server int
		head   int    // bytes of the first block
		whose  string // in the note; "" when the result is whole
	}{
		{"below the server's", run(5_000, 1_000), 100_000, 1_000, "this tool's limit of 1000"},
		{"above the server's", run(5_000, 10_000), 1_000, 5_000, ""},
		{"none: the server's", run(5_000, 0), 2_000, 2_000, "this server's limit of 2000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := RunResult(tt.snap, tt.server)
			if got := len(res.Content[0].Text); got != tt.head {
				t.Fatalf("first block is %d bytes, want %d", got, tt.head)
			}
			if tt.whose == "" {
				if len(res.Content) != 1 {
					t.Fatalf("result = %d blocks, want the whole in one", len(res.Content))
				}
				return
			}
			if len(res.Content) < 3 || !strings.Contains(res.Content[1].Text, tt.whose) {
				t.Fatalf("note = %q, want it to name %q", res.Content[1].Text, tt.whose)
			}
		})
	}
}
