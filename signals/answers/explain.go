package answers

import (
	"fmt"
	"math/big"
	"regexp"
	"strconv"
	"strings"
)

// sentences word the rules of a schema validation error (the compiler's
// texts) as sentences about the value: each pattern's groups fill its
// format, numbers written as a person writes them.
var sentences = []struct {
	re     *regexp.Regexp
	format string
	number []bool // which groups are numbers
}{
	{regexp.MustCompile(`^maximum: (\S+) is greater than (\S+)$`), "%s is more than the maximum %s", []bool{true, true}},
	{regexp.MustCompile(`^minimum: (\S+) is less than (\S+)$`), "%s is less than the minimum %s", []bool{true, true}},
	{regexp.MustCompile(`^exclusiveMaximum: (\S+) is greater than or equal to (\S+)$`), "%s is not below the exclusive maximum %s", []bool{true, true}},
	{regexp.MustCompile(`^exclusiveMinimum: (\S+) is less than or equal to (\S+)$`), "%s is not above the exclusive minimum %s", []bool{true, true}},
	{regexp.MustCompile(`^multipleOf: (\S+) is not a multiple of (\S+)$`), "%s is not a multiple of %s", []bool{true, true}},
	{regexp.MustCompile(`^enum: (.*) does not equal any of: \[(.*)\]$`), "%s is not one of the values its enum allows: %s", []bool{false, false}},
	{regexp.MustCompile(`^type: (.*) has type "(\w+)", want "(\w+)"$`), "%s is of type %s; its type must be %s", []bool{false, false, false}},
	{regexp.MustCompile(`^type: (.*) has type "(\w+)", want one of (.*)$`), "%s is of type %s; its type must be one of %s", []bool{false, false, false}},
	{regexp.MustCompile(`^minLength: (".*") contains (\d+) Unicode code points, fewer than (\d+)$`), "%s is %s characters long, shorter than the minimum length %s", []bool{false, false, false}},
	{regexp.MustCompile(`^maxLength: (".*") contains (\d+) Unicode code points, more than (\d+)$`), "%s is %s characters long, longer than the maximum length %s", []bool{false, false, false}},
	{regexp.MustCompile(`^pattern: (".*") does not match regular expression (".*")$`), "%s does not match the pattern %s", []bool{false, false}},
	{regexp.MustCompile(`^minItems: array length (\d+) is less than (\d+)$`), "has %s items, fewer than the minimum %s", []bool{false, false}},
	{regexp.MustCompile(`^maxItems: array length (\d+) is greater than (\d+)$`), "has %s items, more than the maximum %s", []bool{false, false}},
}

// required and additional are the rules that name properties; consts
// are the branches of an anyOf or oneOf of consts (a titled select) that a
// value matches none of, and choice such a select's rule.
var (
	required   = regexp.MustCompile(`^required: missing properties: \[(.*)\]$`)
	additional = regexp.MustCompile(`^unexpected additional properties \[(.*)\]$`)
	consts     = regexp.MustCompile(`(?m)^\s*validating (\S+)/(?:anyOf|oneOf)/\d+: const: (.*) does not equal (.*)$`)
	choice     = regexp.MustCompile(`^(anyOf|oneOf): did not validate against any of \[.*\]:?$`)
)

// Explain words a schema validation error (of a schema CompileSchema
// compiled) as a sentence about the field it concerns, such as
// "batchSize: 5000 is more than the maximum 1000" or "mode is required",
// the field named by its path ("order.items"). A text it does not know is
// kept as the compiler wrote it, after the field's name.
func Explain(err error) string {
	if m := consts.FindAllStringSubmatch(err.Error(), -1); m != nil {
		allowed := make([]string, len(m))
		for i, c := range m {
			allowed[i] = c[3]
		}
		return prefix(fieldOf(m[0][1]), fmt.Sprintf("%s is not one of the values allowed: %s", m[0][2], strings.Join(allowed, " ")))
	}
	path, rule := innermost(err.Error())
	field := fieldOf(path)
	if m := choice.FindStringSubmatch(rule); m != nil {
		return prefix(field, "the value is not one of those its "+m[1]+" allows")
	}
	if m := required.FindStringSubmatch(rule); m != nil {
		return join(field, names(m[1]), "is required", "are required")
	}
	if m := additional.FindStringSubmatch(rule); m != nil {
		return join(field, names(m[1]), "is not allowed: the schema takes no additional properties",
			"are not allowed: the schema takes no additional properties")
	}
	for _, s := range sentences {
		m := s.re.FindStringSubmatch(rule)
		if m == nil {
			continue
		}
		args := make([]any, len(m)-1)
		for i, g := range m[1:] {
			if s.number[i] {
				g = number(g)
			}
			args[i] = g
		}
		return prefix(field, fmt.Sprintf(s.format, args...))
	}
	return prefix(field, rule)
}

// innermost splits a validation error into the path of its innermost
// "validating <path>: " and the rule after it.
func innermost(msg string) (path, rule string) {
	const mark = "validating "
	for {
		i := strings.Index(msg, mark)
		if i < 0 {
			return path, msg
		}
		rest := msg[i+len(mark):]
		j := strings.Index(rest, ": ")
		if j < 0 {
			return path, msg
		}
		path, msg = rest[:j], rest[j+2:]
	}
}

// fieldOf turns a schema path ("/properties/order/properties/items") into
// a field name ("order.items"); the root is "".
func fieldOf(path string) string {
	var parts []string
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties", "patternProperties":
			if i+1 < len(segs) {
				parts = append(parts, segs[i+1])
				i++
			}
		case "items":
			parts = append(parts, "[]")
		}
	}
	return strings.ReplaceAll(strings.Join(parts, "."), ".[]", "[]")
}

// names are the property names of a quoted list (`"a" "b"`).
func names(list string) []string {
	var out []string
	for _, f := range strings.Fields(list) {
		if n, err := strconv.Unquote(f); err == nil {
			out = append(out, n)
		} else {
			out = append(out, f)
		}
	}
	return out
}

// join says that the properties of field, named, are (singular) or are
// (plural) what verb says.
func join(field string, props []string, one, many string) string {
	for i, p := range props {
		if field != "" {
			props[i] = field + "." + p
		}
	}
	if len(props) == 1 {
		return props[0] + " " + one
	}
	return strings.Join(props, ", ") + " " + many
}

// prefix names the field a sentence is about.
func prefix(field, sentence string) string {
	if field == "" {
		return sentence
	}
	return field + ": " + sentence
}

// number writes a number of the compiler's texts (a rational "5000/1", a
// float "1000.000000") as a person writes it ("5000", "1000", "0.5").
func number(s string) string {
	if r, ok := new(big.Rat).SetString(s); ok {
		if r.IsInt() {
			return r.Num().String()
		}
		if f, exact := r.Float64(); exact || f != 0 {
			return strconv.FormatFloat(f, 'f', -1, 64)
		}
	}
	return s
}
