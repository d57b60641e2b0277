package operator

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/contrib/envconfig"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/internal/app/config"
	"github.com/openwop/temporal-mcp/internal/app/datadir"
)

// Exit statuses of Main.
const (
	// ExitOK: the command did what it was asked.
	ExitOK = 0
	// ExitFailed: Temporal refused or failed the operation, or move-runs
	// refused some run.
	ExitFailed = 1
	// ExitUsage: the command line is wrong.
	ExitUsage = 2
)

// Commands is the usage of the operator commands, for cmd/server's -h.
const Commands = `Operator commands (docs/upgrades.md, docs/nexus.md; each takes -h):
  versions describe [-deployment NAME]
  versions set-current -deployment NAME -build-id ID
  versions ramp -deployment NAME -build-id ID -percentage P
  versions move-runs -deployment NAME -build-id ID [-run ID]... [-dry-run]
  nexus create-endpoint -name NAME -target-namespace NS [-target-task-queue QUEUE]
`

// command is one subcommand of a group (versions, nexus).
type command struct {
	name, args, summary string
	// flags defines the command's flags on fs and returns what runs it
	// once they are parsed.
	flags func(fs *flag.FlagSet) func(ctx context.Context, c client.Client, out io.Writer) error
}

// groups are the operator commands by group: the subcommands of versions
// and of nexus.
func groups() map[string][]command {
	return map[string][]command{
		"versions": {describeCommand(), setCurrentCommand(), rampCommand(), moveRunsCommand()},
		"nexus":    {createEndpointCommand()},
	}
}

// Main runs the operator command args (args[0] is "versions" or "nexus"),
// connecting to Temporal as env says; it writes its results to stdout and
// its errors to stderr, and returns the exit status.
func Main(ctx context.Context, args []string, env envconfig.EnvLookup, stdout, stderr io.Writer) int {
	var cmds []command
	if len(args) > 0 {
		cmds = groups()[args[0]]
	}
	if cmds == nil {
		fmt.Fprintf(stderr, "unknown command %q\n\n%s", strings.Join(args, " "), Commands)
		return ExitUsage
	}
	if len(args) < 2 || args[1] == "-h" || args[1] == "-help" || args[1] == "--help" {
		fmt.Fprint(stderr, Commands)
		if len(args) < 2 {
			return ExitUsage
		}
		return ExitOK
	}
	for _, cmd := range cmds {
		if cmd.name == args[1] {
			return run(ctx, args[0]+" "+cmd.name, cmd, args[2:], env, stdout, stderr)
		}
	}
	fmt.Fprintf(stderr, "unknown command \"%s %s\"\n\n%s", args[0], args[1], Commands)
	return ExitUsage
}

// run parses the flags of cmd (named name: group and subcommand),
// connects and runs it.
func run(ctx context.Context, name string, cmd command, args []string, env envconfig.EnvLookup, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	do := cmd.flags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: openwop-server %s %s\n\n%s\n\nFlags:\n", name, cmd.args, cmd.summary)
		fs.PrintDefaults()
		fmt.Fprintf(fs.Output(), "\nIt connects to Temporal as the server does: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, a profile\n"+
			"(TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE) and the other TEMPORAL_* variables of docs/configuration.md; without\n"+
			"them, to the Temporal server of the openwop-server that holds %s (default %s).\n", config.EnvDataDir, config.DefaultDataDir)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitOK
		}
		return ExitUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "%s: unexpected argument %q\n", name, fs.Arg(0))
		fs.Usage()
		return ExitUsage
	}
	if err := checkRequired(fs); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		fs.Usage()
		return ExitUsage
	}
	c, err := connect(ctx, env)
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitFailed
	}
	defer c.Close()
	if err := do(ctx, c, stdout); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return ExitFailed
	}
	return ExitOK
}

// required marks a flag that must be set: its usage starts with it.
const required = "(required) "

// checkRequired reports the first required flag of fs left unset.
func checkRequired(fs *flag.FlagSet) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err == nil && strings.HasPrefix(f.Usage, required) && (!set[f.Name] || f.Value.String() == "") {
			err = fmt.Errorf("-%s is required", f.Name)
		}
	})
	return err
}

// connect dials Temporal as cmd/server does (config.LoadConfig of env).
// Without TEMPORAL_ADDRESS (nor a profile), the server is the one
// embedded by the cmd/server that holds the data directory.
func connect(ctx context.Context, env envconfig.EnvLookup) (client.Client, error) {
	cfg, err := config.LoadConfig(env)
	if err != nil {
		return nil, fmt.Errorf("invalid configuration: %w", err)
	}
	if !cfg.Remote {
		h, err := embeddedHolder(cfg.DataDir)
		if err != nil {
			return nil, err
		}
		cfg.Client = client.Options{HostPort: h.TemporalAddress, Namespace: h.Namespace}
	}
	return cfg.Dial(ctx, zap.NewNop(), nil)
}

// embeddedHolder is the cmd/server process that holds the data directory
// dir and serves its embedded Temporal server.
func embeddedHolder(dir string) (datadir.Holder, error) {
	noServer := fmt.Errorf("no openwop-server runs with data directory %s, so there is no embedded Temporal server to "+
		"connect to: start it, or set TEMPORAL_ADDRESS (or TEMPORAL_PROFILE) to the Temporal server the adapter uses, or %s "+
		"to the server's data directory", dir, config.EnvDataDir)
	if _, err := os.Stat(dir); err != nil {
		return datadir.Holder{}, noServer
	}
	l, err := datadir.TryLock(dir)
	if err == nil {
		_ = l.Release()
		return datadir.Holder{}, noServer
	}
	var held *datadir.HeldError
	switch {
	case !errors.As(err, &held):
		return datadir.Holder{}, err
	case held.Holder.TemporalAddress == "":
		return datadir.Holder{}, fmt.Errorf("%w: try again once it serves", held)
	}
	return held.Holder, nil
}
