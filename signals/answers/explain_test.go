package answers_test

import (
	"encoding/json"
	"testing"

	"github.com/openwop/temporal-mcp/signals/answers"
)

// TestExplain: a schema validation error reads as a sentence about the
// field, numbers written as a person writes them.
func TestExplain(t *testing.T) {
	rs, err := answers.CompileSchema(json.RawMessage(`{"type":"object","properties":{
		"batchSize":{"type":"integer","maximum":1000,"minimum":1},
		"ratio":{"type":"number","exclusiveMaximum":1},
		"mode":{"type":"string","enum":["fast","safe"]},
		"code":{"type":"string","minLength":3,"maxLength":5,"pattern":"^[a-z]+$"},
		"order":{"type":"object","properties":{"id":{"type":"string"},"items":{"type":"array","minItems":1}},"required":["id"],"additionalProperties":false}
	},"required":["mode"]}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ value, want string }{
		{`{"mode":"fast","batchSize":5000}`, "batchSize: 5000 is more than the maximum 1000"},
		{`{"mode":"fast","batchSize":0}`, "batchSize: 0 is less than the minimum 1"},
		{`{"mode":"fast","ratio":1.5}`, "ratio: 1.5 is not below the exclusive maximum 1"},
		{`{"mode":"slow"}`, "mode: slow is not one of the values its enum allows: fast safe"},
		{`{}`, "mode is required"},
		{`{"mode":"fast","batchSize":"ten"}`, `batchSize: ten is of type string; its type must be integer`},
		{`{"mode":"fast","code":"ab"}`, `code: "ab" is 2 characters long, shorter than the minimum length 3`},
		{`{"mode":"fast","code":"abcdef"}`, `code: "abcdef" is 6 characters long, longer than the maximum length 5`},
		{`{"mode":"fast","code":"AB1"}`, `code: "AB1" does not match the pattern "^[a-z]+$"`},
		{`{"mode":"fast","order":{}}`, "order.id is required"},
		{`{"mode":"fast","order":{"id":"x","items":[]}}`, "order.items: has 0 items, fewer than the minimum 1"},
		{`{"mode":"fast","order":{"id":"x","extra":1}}`, "order.extra is not allowed: the schema takes no additional properties"},
	} {
		t.Run(tc.value, func(t *testing.T) {
			var v any
			if err := json.Unmarshal([]byte(tc.value), &v); err != nil {
				t.Fatal(err)
			}
			verr := rs.Validate(v)
			if verr == nil {
				t.Fatal("no validation error")
			}
			if got := answers.Explain(verr); got != tc.want {
				t.Fatalf("Explain = %q, want %q (from %q)", got, tc.want, verr)
			}
		})
	}
}
