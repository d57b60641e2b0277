package repocheck

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

// codeBlock is a fenced code block of a Markdown file.
type codeBlock struct {
	lang string // the info string's first word: "go", "sh", "json", ...
	line int    // 1-based line of the opening fence
	text string // the content, the fence's indentation removed
}

// markdown is what the checks read of a Markdown file: its fenced code
// blocks, its heading anchors and its prose (the lines outside fences).
type markdown struct {
	blocks  []codeBlock
	anchors map[string]bool
	prose   []proseLine
}

// proseLine is a line outside the fenced code blocks.
type proseLine struct {
	n    int
	text string
}

var (
	fenceRE   = regexp.MustCompile("^( {0,3})(```+|~~~+)\\s*([^`\\s]*)")
	headingRE = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
)

// parseMarkdown splits src into fenced code blocks, heading anchors (as
// GitHub makes them) and the remaining lines.
func parseMarkdown(src string) markdown {
	md := markdown{anchors: map[string]bool{}}
	seen := map[string]int{}
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		m := fenceRE.FindStringSubmatch(lines[i])
		if m == nil {
			if h := headingRE.FindStringSubmatch(lines[i]); h != nil {
				md.anchors[uniqueAnchor(seen, slug(h[2]))] = true
			}
			md.prose = append(md.prose, proseLine{n: i + 1, text: lines[i]})
			continue
		}
		indent, fence := len(m[1]), m[2]
		b := codeBlock{lang: strings.ToLower(m[3]), line: i + 1}
		var body []string
		for i++; i < len(lines); i++ {
			trimmed := strings.TrimLeft(lines[i], " ")
			if len(lines[i])-len(trimmed) <= 3 && strings.HasPrefix(trimmed, fence[:1]) &&
				strings.TrimRight(trimmed, fence[:1]+" ") == "" && len(strings.TrimRight(trimmed, " ")) >= len(fence) {
				break
			}
			body = append(body, dedent(lines[i], indent))
		}
		b.text = strings.Join(body, "\n")
		if len(body) > 0 {
			b.text += "\n"
		}
		md.blocks = append(md.blocks, b)
	}
	return md
}

// dedent removes up to n leading spaces from line, as CommonMark does
// with the lines of a fenced block indented by n.
func dedent(line string, n int) string {
	for i := 0; i < n && strings.HasPrefix(line, " "); i++ {
		line = line[1:]
	}
	return line
}

// slug is the anchor GitHub gives a heading: its text in lower case,
// without punctuation (inline markup included), spaces as hyphens.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.Mn, r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// uniqueAnchor numbers repeated anchors as GitHub does: the second
// "usage" is "usage-1".
func uniqueAnchor(seen map[string]int, a string) string {
	n := seen[a]
	seen[a] = n + 1
	if n == 0 {
		return a
	}
	return fmt.Sprintf("%s-%d", a, n)
}

var (
	codeSpanRE = regexp.MustCompile("`+[^`]*`+")
	linkRE     = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
)

// link is a link target found in a Markdown file's prose.
type link struct {
	line   int
	target string
}

// links returns the link targets of the prose: inline links and images,
// code spans left out.
func (md markdown) links() []link {
	var out []link
	for _, l := range md.prose {
		text := codeSpanRE.ReplaceAllStringFunc(l.text, func(s string) string { return strings.Repeat(" ", len(s)) })
		for _, m := range linkRE.FindAllStringSubmatch(text, -1) {
			out = append(out, link{line: l.n, target: m[1]})
		}
	}
	return out
}
