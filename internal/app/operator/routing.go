package operator

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"

	"go.temporal.io/sdk/client"
)

func setCurrentCommand() command {
	return command{
		name: "set-current", args: "-deployment NAME -build-id ID",
		summary: "Makes the version current: Temporal starts every new run of the deployment's task queues on it, and the\n" +
			"catalog lists its tools' specs within seconds. Temporal refuses a version none of whose workers has polled.",
		flags: func(fs *flag.FlagSet) func(context.Context, client.Client, io.Writer) error {
			name := fs.String("deployment", "", required+"the Worker Deployment")
			build := fs.String("build-id", "", required+"the build to make current")
			return func(ctx context.Context, c client.Client, out io.Writer) error {
				h := c.WorkerDeploymentClient().GetHandle(*name)
				d, err := h.Describe(ctx, client.WorkerDeploymentDescribeOptions{})
				if err != nil {
					return fmt.Errorf("describe worker deployment %q: %w", *name, err)
				}
				// The conflict token refuses the change if another one
				// came in between.
				_, err = h.SetCurrentVersion(ctx, client.WorkerDeploymentSetCurrentVersionOptions{BuildID: *build, ConflictToken: d.ConflictToken})
				if err != nil {
					return fmt.Errorf("make build %q of worker deployment %q current: %w", *build, *name, err)
				}
				fmt.Fprintf(out, "deployment %s: current version %s (was %s)\n", *name, *build, buildOf(d.Info.RoutingConfig.CurrentVersion))
				return nil
			}
		},
	}
}

func rampCommand() command {
	return command{
		name: "ramp", args: "-deployment NAME -build-id ID -percentage P",
		summary: "Ramps the version: a share P (0-100) of the new runs goes to it, the rest to the current version; the\n" +
			"server checks each call against the spec of the version it picks (docs/upgrades.md, Ramping). -percentage 0\n" +
			"ends the ramp.",
		flags: func(fs *flag.FlagSet) func(context.Context, client.Client, io.Writer) error {
			name := fs.String("deployment", "", required+"the Worker Deployment")
			build := fs.String("build-id", "", required+"the build to ramp")
			pct := percentage(-1)
			fs.Var(&pct, "percentage", required+"the share of new runs, 0 to 100")
			return func(ctx context.Context, c client.Client, out io.Writer) error {
				_, err := c.WorkerDeploymentClient().GetHandle(*name).SetRampingVersion(ctx,
					client.WorkerDeploymentSetRampingVersionOptions{BuildID: *build, Percentage: float32(pct)})
				if err != nil {
					return fmt.Errorf("ramp build %q of worker deployment %q: %w", *build, *name, err)
				}
				if pct == 0 {
					fmt.Fprintf(out, "deployment %s: no version ramping\n", *name)
					return nil
				}
				fmt.Fprintf(out, "deployment %s: build %s ramping at %g%%\n", *name, *build, float64(pct))
				return nil
			}
		},
	}
}

// percentage is the -percentage flag: 0 to 100 (-1 while unset).
type percentage float64

func (p *percentage) String() string {
	if *p < 0 {
		return ""
	}
	return strconv.FormatFloat(float64(*p), 'g', -1, 64)
}

func (p *percentage) Set(v string) error {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f > 100 {
		return fmt.Errorf("%q: want a number from 0 to 100", v)
	}
	*p = percentage(f)
	return nil
}
