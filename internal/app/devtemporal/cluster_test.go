package devtemporal_test

import (
	"context"
	"testing"
	"time"

	"go.temporal.io/sdk/worker"
	"go.temporal.io/server/api/adminservice/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/openwop/temporal-mcp/internal/app/devtemporal"
	"github.com/openwop/temporal-mcp/internal/testing/pgtest"
)

// TestClusterOnPostgres: two cluster nodes on one PostgreSQL database
// form one Temporal cluster (each service's ring has both nodes, the
// history shards are the cluster's); a workflow started through one
// node's frontend is signalled and finished through the other's, and
// keeps working through the second node when the first stops.
func TestClusterOnPostgres(t *testing.T) {
	if _, err := pgtest.Binaries(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pg, err := pgtest.Start(ctx, pgtest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	node := func() *devtemporal.Server {
		t.Helper()
		port, err := devtemporal.FreeClusterPort(devtemporal.DefaultIP)
		if err != nil {
			t.Fatal(err)
		}
		return start(t, devtemporal.Options{
			Postgres: &devtemporal.Postgres{Address: pg.Addr(), User: pg.User()},
			Port:     port, ClusterNode: true, HistoryShards: 4,
		})
	}
	a := node()
	defer func() { _ = a.Stop() }()
	b := node()
	defer func() { _ = b.Stop() }()

	waitRings(ctx, t, b.Address(), 2)

	ca, cb := dial(t, a), dial(t, b)
	defer ca.Close()
	defer cb.Close()
	w := worker.New(cb, taskQueue, worker.Options{})
	w.RegisterWorkflow(waitForSignal)
	if err := w.Start(); err != nil {
		t.Fatalf("worker: %v", err)
	}
	defer w.Stop()
	if _, err := ca.ExecuteWorkflow(ctx, startOptions("acme/cluster-1", "acme"), waitForSignal, "via-a"); err != nil {
		t.Fatalf("start through node a: %v", err)
	}
	if err := cb.SignalWorkflow(ctx, "acme/cluster-1", "", signalName, "via-b"); err != nil {
		t.Fatalf("signal through node b: %v", err)
	}
	var result string
	if err := cb.GetWorkflow(ctx, "acme/cluster-1", "").Get(ctx, &result); err != nil || result != "via-a:via-b" {
		t.Fatalf("result through node b = %q, %v; want via-a:via-b", result, err)
	}

	// Node b takes over every shard once node a has left.
	ca.Close()
	if err := a.Stop(); err != nil {
		t.Fatalf("stop node a: %v", err)
	}
	waitRings(ctx, t, b.Address(), 1)
	for i, id := range []string{"acme/cluster-2", "acme/cluster-3", "acme/cluster-4", "acme/cluster-5"} {
		if _, err := cb.ExecuteWorkflow(ctx, startOptions(id, "acme"), waitForSignal, "alone"); err != nil {
			t.Fatalf("start %d after node a stopped: %v", i, err)
		}
		if err := cb.SignalWorkflow(ctx, id, "", signalName, "b"); err != nil {
			t.Fatalf("signal %s: %v", id, err)
		}
		if err := cb.GetWorkflow(ctx, id, "").Get(ctx, &result); err != nil || result != "alone:b" {
			t.Fatalf("result of %s = %q, %v", id, result, err)
		}
	}
}

// waitRings waits until every service ring the frontend at addr reports
// has want members and the cluster has 4 history shards.
func waitRings(ctx context.Context, t *testing.T, addr string, want int) {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	admin := adminservice.NewAdminServiceClient(conn)
	var last string
	for {
		resp, err := admin.DescribeCluster(ctx, &adminservice.DescribeClusterRequest{})
		if err == nil {
			if resp.GetHistoryShardCount() != 4 {
				t.Fatalf("history shards = %d, want 4", resp.GetHistoryShardCount())
			}
			ok := len(resp.GetMembershipInfo().GetRings()) == 4
			last = ""
			for _, r := range resp.GetMembershipInfo().GetRings() {
				last += r.GetRole() + "=" + string(rune('0'+r.GetMemberCount())) + " "
				ok = ok && int(r.GetMemberCount()) == want
			}
			if ok {
				return
			}
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("rings never had %d members each: %s", want, last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
