package workflows

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"path/filepath"
	"testing"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/log"
	"go.temporal.io/sdk/temporal"
)

// TestQuietLogger: only the SDK's heartbeat warning about a cancellation
// is logged at DEBUG level; every other line keeps its level, and the
// logger keeps reporting the caller's line.
func TestQuietLogger(t *testing.T) {
	tests := []struct {
		name string
		log  func(l quietLogger)
		want string
	}{
		{"cancelled", func(l quietLogger) { l.Warn(heartbeatErrorLine, "Error", temporal.NewCanceledError()) }, "DEBUG"},
		{"run gone", func(l quietLogger) {
			l.Warn(heartbeatErrorLine, "Error", serviceerror.NewNotFound("workflow execution already completed"))
		}, "DEBUG"},
		{"other heartbeat error", func(l quietLogger) { l.Warn(heartbeatErrorLine, "Error", errors.New("unavailable")) }, "WARN"},
		{"other warning about a cancellation", func(l quietLogger) { l.Warn("something else", "Error", temporal.NewCanceledError()) }, "WARN"},
		{"error", func(l quietLogger) { l.Error(heartbeatErrorLine, "Error", temporal.NewCanceledError()) }, "ERROR"},
		{"info", func(l quietLogger) { l.Info("hello") }, "INFO"},
		{"with fields", func(l quietLogger) {
			l.With("k", "v").(quietLogger).Warn(heartbeatErrorLine, "Error", temporal.NewCanceledError())
		}, "DEBUG"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{AddSource: true, Level: slog.LevelDebug})
			tc.log(newQuietLogger(log.NewStructuredLogger(slog.New(h))))
			var line struct {
				Level  string `json:"level"`
				Source struct {
					File string `json:"file"`
				} `json:"source"`
			}
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatalf("logged %q: %v", buf.String(), err)
			}
			if line.Level != tc.want {
				t.Errorf("logged at %s, want %s: %s", line.Level, tc.want, buf.String())
			}
			if filepath.Base(line.Source.File) != "quietlog_internal_test.go" {
				t.Errorf("caller %s, want this test's line", line.Source.File)
			}
		})
	}
}
