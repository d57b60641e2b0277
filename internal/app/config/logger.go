package config

import (
	"errors"
	"fmt"
	"log/slog"

	sdklog "go.temporal.io/sdk/log"
	"go.uber.org/zap"
	"go.uber.org/zap/exp/zapslog"
	"go.uber.org/zap/zapcore"

	"github.com/openwop/temporal-mcp/runs"
)

// NewLogger builds the process logger: JSON lines (LogJSON, production) or
// human-readable console lines (LogConsole, development) on stderr at level.
func NewLogger(format string, level zapcore.Level) (*zap.Logger, error) {
	var cfg zap.Config
	switch format {
	case LogJSON:
		cfg = zap.NewProductionConfig()
	case LogConsole:
		cfg = zap.NewDevelopmentConfig()
		cfg.DisableStacktrace = true
	default:
		return nil, fmt.Errorf("log format %q: want %s or %s", format, LogJSON, LogConsole)
	}
	cfg.Level = zap.NewAtomicLevelAt(level)
	l, err := cfg.Build()
	if err != nil {
		return nil, fmt.Errorf("build logger: %w", err)
	}
	return l, nil
}

// SDKLogger adapts a zap logger to the Temporal SDK's logger interface
// (through log/slog), so SDK, worker and server logs share one output. Its
// lines are named "temporal-sdk".
func SDKLogger(zl *zap.Logger) sdklog.Logger {
	return sdklog.NewStructuredLogger(slog.New(zapslog.NewHandler(zl.Core(), zapslog.WithName("temporal-sdk"))))
}

// LogSearchAttributes logs the failure of runs.EnsureSearchAttributes at
// WARN: the process keeps running, but no run can start until the
// attributes exist. A missing-attributes error is logged with its message,
// which names them and the commands that create them.
func LogSearchAttributes(logger *zap.Logger, err error) {
	if missing, ok := errors.AsType[*runs.MissingSearchAttributesError](err); ok {
		logger.Warn(missing.Error(), zap.Strings("missing", missing.Names), zap.NamedError("cause", missing.Err))
		return
	}
	logger.Warn("could not check the run search attributes; runs fail to start if they are missing", zap.Error(err))
}
