package workflows

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/openwop/temporal-mcp/signals/answers"
)

// SchemaOption adds a rule to a schema the library derives from a Go
// struct: a tool's input schema, derived from its input type (give the
// option to NewTool, where it is a ToolOption), or a question's, derived
// from AskAs's type parameter (give it to AskAs, AskAsFrom or FlatSchema).
// The same options serve both, so a form asked during a run takes the
// bounds, enums and defaults a tool's arguments take, without a
// hand-written JSON Schema. Descriptions come from the fields' `jsonschema`
// tags in both, or from WithDescription.
//
// An option names a property by its JSON name. The schema it edits is the
// one the agent sees and the one every answer (or argument) is checked
// against: a value outside an enum or a bound is refused before the run
// sees it. An option that names no property of the type, or a rule that
// does not fit the property's type, is an error (NewTool's Err; AskAs's
// error), and so is an enum value or a default that the property's own
// rules refuse.
type SchemaOption struct {
	edit func(*jsonschema.Schema) error
}

// applyTool makes a SchemaOption a ToolOption: it edits the input schema.
func (o SchemaOption) applyTool(c *toolConfig) { c.edits = append(c.edits, o) }

// WithSchema edits the derived schema with a function, for a rule no other
// SchemaOption sets.
func WithSchema(edit func(*jsonschema.Schema) error) SchemaOption {
	return SchemaOption{edit: edit}
}

// onProperty returns the option that applies set to the property prop,
// which must be of one of the JSON types given (any type when none is).
func onProperty(prop string, set func(p *jsonschema.Schema) error, types ...string) SchemaOption {
	return WithSchema(func(s *jsonschema.Schema) error {
		p, ok := s.Properties[prop]
		if !ok || p == nil {
			return fmt.Errorf("no property %q", prop)
		}
		if t := typeOf(p); len(types) > 0 && !slices.Contains(types, t) {
			return fmt.Errorf("property %q is of type %s, not %s", prop, t, strings.Join(types, " or "))
		}
		if err := set(p); err != nil {
			return fmt.Errorf("property %q: %w", prop, err)
		}
		return nil
	})
}

// typeOf is the JSON type of a property: its type, or the one that is not
// null of a nullable one (a pointer field).
func typeOf(p *jsonschema.Schema) string {
	if p.Type != "" {
		return p.Type
	}
	for _, t := range p.Types {
		if t != "null" {
			return t
		}
	}
	return ""
}

// WithRange sets the minimum and maximum (both inclusive) of the numeric
// property prop.
func WithRange(prop string, minimum, maximum float64) SchemaOption {
	return onProperty(prop, func(p *jsonschema.Schema) error {
		if minimum > maximum {
			return fmt.Errorf("minimum %v is more than the maximum %v", minimum, maximum)
		}
		p.Minimum, p.Maximum = &minimum, &maximum
		return nil
	}, "number", "integer")
}

// WithLength sets the minimum and maximum length, in characters (Unicode
// code points), of the string property prop.
func WithLength(prop string, minimum, maximum int) SchemaOption {
	return onProperty(prop, func(p *jsonschema.Schema) error {
		if minimum < 0 || minimum > maximum {
			return fmt.Errorf("length %d to %d is not a range of lengths", minimum, maximum)
		}
		p.MinLength, p.MaxLength = &minimum, &maximum
		return nil
	}, "string")
}

// WithEnum limits the property prop to the values given, each a value of
// the property's type (WithEnum("mode", "fast", "safe") for a string
// field). MCP clients show a string property with an enum as a choice.
func WithEnum(prop string, values ...any) SchemaOption {
	return onProperty(prop, func(p *jsonschema.Schema) error {
		if len(values) == 0 {
			return fmt.Errorf("enum has no value")
		}
		p.Enum = make([]any, len(values))
		for i, v := range values {
			j, err := asJSON(v)
			if err != nil {
				return fmt.Errorf("enum value %v: %w", v, err)
			}
			p.Enum[i] = j
		}
		return nil
	})
}

// WithDefault records the default value of the property prop. An MCP
// client offers it in the form it shows. For tool input the tool itself
// must apply it when the argument is absent; AskAs fills it in for an
// optional property (a field with omitempty) the answer leaves out.
func WithDefault(prop string, value any) SchemaOption {
	return onProperty(prop, func(p *jsonschema.Schema) error {
		raw, err := json.Marshal(value)
		if err != nil {
			return fmt.Errorf("default: %w", err)
		}
		p.Default = raw
		return nil
	})
}

// WithDescription sets the description of the property prop, in place of
// the one its field's `jsonschema` tag gives: for a text that depends on
// the run, such as a question that names the order it is about.
func WithDescription(prop, description string) SchemaOption {
	return onProperty(prop, func(p *jsonschema.Schema) error {
		p.Description = description
		return nil
	})
}

// asJSON returns v as the JSON value it encodes to (a float64 for a
// number, a string, a bool, ...).
func asJSON(v any) (any, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var j any
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, err
	}
	return j, nil
}

// applyOptions applies opts to s, then checks that every enum value and
// default of its properties fits the property's other rules.
func applyOptions(s *jsonschema.Schema, opts []SchemaOption) error {
	for _, o := range opts {
		if o.edit == nil {
			continue
		}
		if err := o.edit(s); err != nil {
			return err
		}
	}
	names := make([]string, 0, len(s.Properties))
	for name := range s.Properties {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := checkValues(name, s.Properties[name]); err != nil {
			return err
		}
	}
	return nil
}

// checkValues checks the enum values of the property name against its
// other rules, and its default against all of them.
func checkValues(name string, p *jsonschema.Schema) error {
	if p == nil || (len(p.Enum) == 0 && p.Default == nil) {
		return nil
	}
	bare := *p
	bare.Enum, bare.Default = nil, nil
	rs, err := bare.Resolve(nil)
	if err != nil {
		return fmt.Errorf("property %q: %w", name, err)
	}
	for _, v := range p.Enum {
		if err := rs.Validate(v); err != nil {
			return fmt.Errorf("property %q: enum value %s", name, answers.Explain(err))
		}
	}
	if p.Default == nil {
		return nil
	}
	full := *p
	full.Default = nil
	if rs, err = full.Resolve(nil); err != nil {
		return fmt.Errorf("property %q: %w", name, err)
	}
	var d any
	if err := json.Unmarshal(p.Default, &d); err != nil {
		return fmt.Errorf("property %q: default: %w", name, err)
	}
	if err := rs.Validate(d); err != nil {
		return fmt.Errorf("property %q: default %s", name, answers.Explain(err))
	}
	return nil
}
