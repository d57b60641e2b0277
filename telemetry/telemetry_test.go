package telemetry

import (
	"context"
	"net/http"
	"testing"

	"go.opentelemetry.io/otel/trace"
)

const (
	metaParent   = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	headerParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
)

// TestExtract: _meta's traceparent wins over the headers', the headers'
// is used without one in _meta, and a request with neither has no parent.
func TestExtract(t *testing.T) {
	h := http.Header{}
	h.Set("traceparent", headerParent)
	tests := []struct {
		name   string
		meta   map[string]any
		header http.Header
		want   string // trace id; "" for none
	}{
		{"meta", map[string]any{"traceparent": metaParent}, nil, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"meta over header", map[string]any{"traceparent": metaParent}, h, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"header", map[string]any{"other": "x"}, h, "0af7651916cd43dd8448eb211c80319c"},
		{"no meta", nil, h, "0af7651916cd43dd8448eb211c80319c"},
		{"neither", map[string]any{}, http.Header{}, ""},
		{"not a traceparent", map[string]any{"traceparent": "garbage"}, h, ""},
		{"not a string", map[string]any{"traceparent": 42}, h, "0af7651916cd43dd8448eb211c80319c"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := trace.SpanContextFromContext(Extract(context.Background(), tt.meta, tt.header))
			got := ""
			if sc.IsValid() {
				got = sc.TraceID().String()
				if !sc.IsRemote() {
					t.Error("extracted span context is not remote")
				}
			}
			if got != tt.want {
				t.Fatalf("trace id %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTraceParentRoundTrip(t *testing.T) {
	sc := ParseTraceParent(metaParent)
	if !sc.IsValid() || sc.SpanID().String() != "00f067aa0ba902b7" || !sc.IsSampled() {
		t.Fatalf("ParseTraceParent = %v", sc)
	}
	ctx := trace.ContextWithSpanContext(context.Background(), sc)
	if got := TraceParent(ctx); got != metaParent {
		t.Fatalf("TraceParent = %q, want %q", got, metaParent)
	}
	if TraceParent(context.Background()) != "" || ParseTraceParent("").IsValid() || TraceID(context.Background()) != "" {
		t.Fatal("an untraced context has a trace")
	}
}

func TestRunFields(t *testing.T) {
	ctx := trace.ContextWithSpanContext(context.Background(), ParseTraceParent(metaParent))
	got := map[string]string{}
	for _, f := range RunFields(ctx, "acme/01JABCDEFGHJKMNPQRSTVWXYZ", "refund") {
		got[f.Key] = f.String
	}
	want := map[string]string{FieldRunID: "acme/01JABCDEFGHJKMNPQRSTVWXYZ", FieldTenant: "acme", FieldTool: "refund",
		FieldTraceID: "4bf92f3577b34da6a3ce929d0e0e4736"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestTemporalInterceptorOff(t *testing.T) {
	if i, err := TemporalInterceptor(nil); i != nil || err != nil {
		t.Fatalf("TemporalInterceptor(nil) = %v, %v; want nothing", i, err)
	}
}
