package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/openwop/temporal-mcp/signals"
)

// MaxArgumentsBytes bounds the JSON of a run's arguments (and of each
// pre-run input answer): the contract's signals.MaxInputBytes, which also
// bounds an answer's content. Arguments past it are refused before any run
// starts, with an error that says so.
const MaxArgumentsBytes = signals.MaxInputBytes

// NumberRangeError reports a JSON number that does not fit a 64-bit float
// (e.g. 1e309). Such a value cannot be decoded, validated or passed to a
// workflow.
type NumberRangeError struct {
	// Path locates the number in the checked value ("delayMs",
	// "items[2].size"); empty when the value itself is the number.
	Path string
	// Number is the number as written.
	Number string
}

func (e *NumberRangeError) Error() string {
	n := e.Number
	if len(n) > 32 {
		n = n[:29] + "..."
	}
	if e.Path == "" {
		return fmt.Sprintf("the number %s is out of range of a 64-bit float", n)
	}
	return fmt.Sprintf("%s: the number %s is out of range of a 64-bit float", e.Path, n)
}

// CheckNumbers returns a *NumberRangeError for the first number in the JSON
// value raw that a 64-bit float cannot represent, nil when there is none.
// It reports nothing about malformed JSON: decoding raw reports that.
func CheckNumbers(raw []byte) error {
	if !mayOverflow(raw) {
		return nil
	}
	type frame struct {
		obj     bool
		wantKey bool
		key     string
		idx     int
	}
	var stack []frame
	path := func() string {
		var b strings.Builder
		for _, f := range stack {
			if f.obj {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(f.key)
			} else {
				fmt.Fprintf(&b, "[%d]", f.idx)
			}
		}
		return b.String()
	}
	valueDone := func() {
		if n := len(stack); n > 0 {
			if stack[n-1].obj {
				stack[n-1].wantKey = true
			} else {
				stack[n-1].idx++
			}
		}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err != nil {
			// io.EOF: done; anything else is a syntax error, not ours.
			return nil
		}
		if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
			if d, ok := tok.(json.Delim); ok && d == '}' {
				stack = stack[:n-1]
				valueDone()
				continue
			}
			key, _ := tok.(string)
			stack[n-1].key, stack[n-1].wantKey = key, false
			continue
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{':
				stack = append(stack, frame{obj: true, wantKey: true})
			case '[':
				stack = append(stack, frame{})
			case ']', '}':
				if len(stack) > 0 {
					stack = stack[:len(stack)-1]
				}
				valueDone()
			}
		case json.Number:
			if _, err := strconv.ParseFloat(string(v), 64); err != nil {
				return &NumberRangeError{Path: path(), Number: string(v)}
			}
			valueDone()
		default:
			valueDone()
		}
	}
}

// checkArgumentsLimits refuses a value (what names it in the message)
// that are larger than MaxArgumentsBytes or hold an unrepresentable number.
func (t *Tool) checkArgumentsLimits(what string, raw []byte) error {
	if len(raw) > MaxArgumentsBytes {
		return &ArgumentsError{Tool: t.spec.Name, Problem: fmt.Sprintf("%s too large: %d bytes, more than the %d bytes accepted",
			what, len(raw), MaxArgumentsBytes)}
	}
	if err := CheckNumbers(raw); err != nil {
		return &ArgumentsError{Tool: t.spec.Name, Problem: fmt.Sprintf("invalid %s: %v", what, err), Err: err}
	}
	return nil
}

// mayOverflow reports whether the JSON text raw may hold a number a 64-bit
// float cannot represent: one with an exponent, or with more than 300
// digits. It is a single pass over the bytes, so that CheckNumbers costs
// next to nothing on the usual message, which has neither.
func mayOverflow(raw []byte) bool {
	inString, escaped, digits := false, false, 0
	for _, b := range raw {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch {
		case b == '"':
			inString, digits = true, 0
		case b >= '0' && b <= '9':
			if digits++; digits > 300 {
				return true
			}
		case b == '.':
		case (b == 'e' || b == 'E') && digits > 0:
			return true
		default:
			digits = 0
		}
	}
	return false
}
