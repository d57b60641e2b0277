package operator

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

// envMap is an envconfig.EnvLookup over a map.
type envMap map[string]string

func (e envMap) Environ() []string {
	var out []string
	for k, v := range e {
		out = append(out, k+"="+v)
	}
	return out
}

func (e envMap) LookupEnv(k string) (string, bool) { v, ok := e[k]; return v, ok }

// TestMainUsage: a wrong command line exits 2 naming what is wrong, -h
// exits 0 with the command's help, and no Temporal is dialed for either;
// without TEMPORAL_ADDRESS and no server holding the data directory, a
// command exits 1 saying so.
func TestMainUsage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no command", nil, ExitUsage, "unknown command"},
		{"not versions", []string{"serve"}, ExitUsage, `unknown command "serve"`},
		{"versions alone", []string{"versions"}, ExitUsage, "versions move-runs"},
		{"unknown subcommand", []string{"versions", "promote"}, ExitUsage, `unknown command "versions promote"`},
		{"help", []string{"versions", "move-runs", "-h"}, ExitOK, "Moves the open runs pinned to a build"},
		{"missing deployment", []string{"versions", "set-current", "-build-id", "v2"}, ExitUsage, "-deployment is required"},
		{"missing percentage", []string{"versions", "ramp", "-deployment", "d", "-build-id", "v2"}, ExitUsage, "-percentage is required"},
		{"percentage out of range", []string{"versions", "ramp", "-deployment", "d", "-build-id", "v2", "-percentage", "150"}, ExitUsage, `"150": want a number from 0 to 100`},
		{"unknown flag", []string{"versions", "describe", "-deploy", "d"}, ExitUsage, "flag provided but not defined: -deploy"},
		{"stray argument", []string{"versions", "describe", "d"}, ExitUsage, `unexpected argument "d"`},
		{"no embedded server", []string{"versions", "describe"}, ExitFailed, "no openwop-server runs with data directory " + dir},
		{"nexus alone", []string{"nexus"}, ExitUsage, "nexus create-endpoint"},
		{"unknown nexus subcommand", []string{"nexus", "delete-endpoint"}, ExitUsage, `unknown command "nexus delete-endpoint"`},
		{"nexus help", []string{"nexus", "create-endpoint", "-h"}, ExitOK, "Usage: openwop-server nexus create-endpoint"},
		{"missing endpoint name", []string{"nexus", "create-endpoint", "-target-namespace", "default"}, ExitUsage, "-name is required"},
		{"missing target namespace", []string{"nexus", "create-endpoint", "-name", "tools"}, ExitUsage, "-target-namespace is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := Main(context.Background(), tt.args, envMap{"OPENWOP_DATA_DIR": dir}, &out, &errOut)
			if code != tt.code || !strings.Contains(errOut.String(), tt.want) {
				t.Fatalf("Main(%q) = %d, stderr:\n%s\nwant %d and %q", tt.args, code, errOut.String(), tt.code, tt.want)
			}
		})
	}
}

// TestCheckMove is the table of the check a run passes before it moves to
// another version's spec of its tool.
func TestCheckMove(t *testing.T) {
	spec := signals.ToolSpec{Name: "ship", Description: "Ship an order.", TaskQueue: "q", WorkflowType: "ship",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"order":{"type":"string"},"priority":{"type":"integer"}},"required":["order"]}`),
		PreRunInputs: []signals.PreRunInput{{Key: "approver", Message: "Who approves?",
			Schema: json.RawMessage(`{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}`)}}}
	tests := []struct {
		name   string
		spec   signals.ToolSpec
		wfType string
		in     runInput
		want   string // "" for no error
	}{
		{name: "fits", spec: spec, wfType: "ship", in: runInput{arguments: json.RawMessage(`{"order":"o1"}`)}},
		{name: "fits with pre-run input", spec: spec, wfType: "ship",
			in: runInput{arguments: json.RawMessage(`{"order":"o1"}`), preRunInputs: map[string]json.RawMessage{"approver": json.RawMessage(`{"name":"ann"}`)}}},
		{name: "argument missing", spec: spec, wfType: "ship", in: runInput{arguments: json.RawMessage(`{"priority":1}`)}, want: "order"},
		{name: "argument of another type", spec: spec, wfType: "ship", in: runInput{arguments: json.RawMessage(`{"order":"o1","priority":"high"}`)}, want: "priority"},
		{name: "pre-run input refused", spec: spec, wfType: "ship",
			in: runInput{arguments: json.RawMessage(`{"order":"o1"}`), preRunInputs: map[string]json.RawMessage{"approver": json.RawMessage(`{}`)}}, want: "name"},
		{name: "pre-run input dropped", spec: spec, wfType: "ship",
			in: runInput{arguments: json.RawMessage(`{"order":"o1"}`), preRunInputs: map[string]json.RawMessage{"region": json.RawMessage(`{}`)}}, want: `"region"`},
		{name: "another workflow type", spec: spec, wfType: "ship_v1", in: runInput{arguments: json.RawMessage(`{"order":"o1"}`)}, want: `workflow type "ship"`},
		{name: "another contract", spec: spec, wfType: "ship", in: runInput{plain: true, arguments: json.RawMessage(`{"order":"o1"}`)}, want: "contract"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkMove(tt.spec, tt.wfType, tt.in)
			if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
				t.Fatalf("checkMove = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestSpecOf: the spec is taken from the target version's running
// publications on the run's task queue only.
func TestSpecOf(t *testing.T) {
	v1 := signals.DeploymentVersion{DeploymentName: "d", BuildID: "v1"}
	v2 := signals.DeploymentVersion{DeploymentName: "d", BuildID: "v2"}
	pubs := []signals.Publication{
		{TaskQueue: "q", Version: &v1, Tools: []signals.ToolSpec{{Name: "ship"}, {Name: "old"}}},
		{TaskQueue: "q", Version: &v2, Tools: []signals.ToolSpec{{Name: "ship", Description: "v2"}}},
		{TaskQueue: "other", Version: &v2, Tools: []signals.ToolSpec{{Name: "old"}}},
	}
	if s, err := specOf(pubs, v2, "q", "ship"); err != nil || s.Description != "v2" {
		t.Errorf("specOf ship = %+v, %v; want v2's", s, err)
	}
	if _, err := specOf(pubs, v2, "q", "old"); err == nil || !strings.Contains(err.Error(), `does not serve tool "old"`) {
		t.Errorf("specOf old = %v, want it not served", err)
	}
	if _, err := specOf(pubs, v2, "none", "ship"); err == nil || !strings.Contains(err.Error(), "no running worker") {
		t.Errorf("specOf on a queue v2 does not poll = %v", err)
	}
}
