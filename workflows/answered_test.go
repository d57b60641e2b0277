package workflows_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.temporal.io/sdk/workflow"

	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/workflows"
	"github.com/openwop/temporal-mcp/workflows/workflowstest"
)

// Shipping is the answer the examples' tool asks for.
type Shipping struct {
	Address string `json:"address" jsonschema:"where to ship the order"`
}

// confirmAddress asks for an address and records who gave it.
func confirmAddress(ctx workflow.Context, _ struct{}) (map[string]string, error) {
	a, err := workflows.AskAsFrom[Shipping](ctx, workflows.InputRequest{Key: "address", Title: "Where should the order go?"})
	if err != nil {
		return nil, err
	}
	return map[string]string{"address": a.Value.Address, "confirmedBy": a.By.SubjectID}, nil
}

// AskAsFrom returns the answer with who gave it (the authenticated
// subject whose answer the server accepted) and when, as Approve's
// Decision does.
func ExampleAskAsFrom() {
	reg, err := workflows.NewRegistry([]workflows.Tool{
		workflows.NewTool("confirm_address", "Ask where to ship an order.", confirmAddress, workflows.Suspends()),
	})
	if err != nil {
		panic(err)
	}
	env := workflowstest.New(reg)
	clerk := signals.Subject{SubjectID: "clerk-7", Tenant: workflowstest.DefaultTenant}
	env.Answer("address", workflowstest.Accept(Shipping{Address: "1 Main St"}).As(clerk))
	res, err := env.Call("confirm_address", struct{}{})
	if err != nil {
		panic(err)
	}
	fmt.Println(string(res.Snapshot.Outputs))
	// Output:
	// {"address":"1 Main St","confirmedBy":"clerk-7"}
}

// answeredBy is what a test tool reports of the answers it got.
type answeredBy struct {
	Content  string    `json:"content"`
	By       string    `json:"by"`
	At       time.Time `json:"at"`
	Declined bool      `json:"declined"`
}

// nameSchema is the schema of the questions of the test tools.
var nameSchema = json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)

// answerTools are tools that ask one question ("q") with each of the
// asking functions and return what they learned.
func answerTools() []workflows.Tool {
	req := workflows.InputRequest{Key: "q", Title: "Name?", Schema: nameSchema}
	declined := func(err error) ([]answeredBy, error) {
		if errors.Is(err, workflows.ErrDeclined) {
			return []answeredBy{{Declined: true}}, nil
		}
		return nil, err
	}
	inputFrom := func(ctx workflow.Context, _ struct{}) ([]answeredBy, error) {
		a, err := workflows.AskInputFrom(ctx, req)
		if err != nil {
			return declined(err)
		}
		return []answeredBy{{Content: string(a.Value), By: a.By.SubjectID, At: a.At}}, nil
	}
	asFrom := func(ctx workflow.Context, _ struct{}) ([]answeredBy, error) {
		a, err := workflows.AskAsFrom[struct {
			Name string `json:"name"`
		}](ctx, req)
		if err != nil {
			return declined(err)
		}
		return []answeredBy{{Content: a.Value.Name, By: a.By.SubjectID, At: a.At}}, nil
	}
	inputs := func(ctx workflow.Context, _ struct{}) ([]answeredBy, error) {
		as, err := workflows.AskInputs(ctx, req)
		if err != nil {
			return nil, err
		}
		return []answeredBy{{Content: string(as[0].Content), By: as[0].By.SubjectID, At: as[0].At, Declined: as[0].Declined}}, nil
	}
	return []workflows.Tool{
		workflows.NewTool("input_from", "AskInputFrom.", inputFrom, workflows.Suspends()),
		workflows.NewTool("as_from", "AskAsFrom.", asFrom, workflows.Suspends()),
		workflows.NewTool("inputs", "AskInputs.", inputs, workflows.Suspends()),
	}
}

// TestAskSaysWhoAnswered checks that AskInputFrom, AskAsFrom and AskInputs
// return who answered (or declined) and when the run applied it.
func TestAskSaysWhoAnswered(t *testing.T) {
	bob := signals.Subject{Issuer: "workflowstest", SubjectID: "bob", Tenant: workflowstest.DefaultTenant}
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		tool    string
		answer  workflowstest.Answer
		content string
		decline bool
	}{
		{"input_from", workflowstest.Accept(map[string]string{"name": "Ada"}), `{"name":"Ada"}`, false},
		{"input_from", workflowstest.Decline(), "", true},
		{"as_from", workflowstest.Accept(map[string]string{"name": "Ada"}), "Ada", false},
		{"as_from", workflowstest.Decline(), "", true},
		{"inputs", workflowstest.Accept(map[string]string{"name": "Ada"}), `{"name":"Ada"}`, false},
		{"inputs", workflowstest.Decline(), "", true},
	} {
		t.Run(fmt.Sprintf("%s/decline=%t", tc.tool, tc.decline), func(t *testing.T) {
			reg, err := workflows.NewRegistry(answerTools())
			if err != nil {
				t.Fatal(err)
			}
			env := workflowstest.New(reg)
			env.Temporal().SetStartTime(start)
			env.Answer("q", tc.answer.As(bob))
			res, err := env.Call(tc.tool, struct{}{})
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Result []answeredBy `json:"result"`
			}
			if err := res.Output(&got); err != nil || len(got.Result) != 1 {
				t.Fatalf("outputs %s: %v", res.Snapshot.Outputs, err)
			}
			a := got.Result[0]
			if a.Declined != tc.decline || a.Content != tc.content {
				t.Fatalf("answer = %+v, want content %q declined %t", a, tc.content, tc.decline)
			}
			if tc.decline && tc.tool != "inputs" {
				return // ErrDeclined carries no answer
			}
			if a.By != "bob" || a.At.Before(start) {
				t.Fatalf("answered by %q at %s, want bob at or after %s", a.By, a.At, start)
			}
			if r := res.Snapshot.Resolved; len(r) != 1 || !r[0].ResolvedAt.Equal(a.At) {
				t.Fatalf("At = %s, the run's resolution %v", a.At, r)
			}
		})
	}
}

// TestCreatedAtIsTheServers checks that a run reports the creation time
// the server passed in its StartRequest, not the workflow's start time.
func TestCreatedAtIsTheServers(t *testing.T) {
	reg, err := workflows.NewRegistry(answerTools())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		created time.Time
		want    time.Time
	}{
		{"given", time.Date(2026, 3, 1, 8, 59, 59, 123456789, time.UTC), time.Date(2026, 3, 1, 8, 59, 59, 123456789, time.UTC)},
		{"not given", time.Time{}, time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := workflowstest.New(reg)
			env.Temporal().SetStartTime(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
			env.Answer("q", workflowstest.Accept(map[string]string{"name": "Ada"}))
			res, err := env.Start("input_from", signals.StartRequest{Arguments: json.RawMessage(`{}`), CreatedAt: tc.created})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Snapshot.CreatedAt.Equal(tc.want) {
				t.Fatalf("createdAt = %s, want %s", res.Snapshot.CreatedAt, tc.want)
			}
		})
	}
}
