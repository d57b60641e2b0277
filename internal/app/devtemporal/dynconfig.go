package devtemporal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/server/common/dynamicconfig"
	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/signals"
)

// HistoryCacheSize is the number of workflow executions whose mutable
// state the embedded history service keeps in memory (Temporal's
// history.hostLevelCacheMaxSize; its default is 128,000). A run that fell
// out of the cache is read back from SQLite on its next request, which
// costs a fraction of a millisecond; a cached one costs memory for as long
// as it stays open. 2,000 keeps the cache of a server with 10,000 open
// tasks to a few tens of MB (see docs/performance.md).
const HistoryCacheSize = 2000

// settleTimeout bounds the wait for the namespace registry to see search
// attributes that start-up added, before the forced refresh is turned off.
const settleTimeout = 10 * time.Second

// dynamicConfig is the embedded server's dynamic configuration, for one
// node of a cluster or a server alone. It is mutable: Start turns
// ForceSearchAttributesCacheRefreshOnRead off once the run search
// attributes are registered and visible.
func dynamicConfig(clusterNode bool) *dynamicconfig.MemoryClient {
	dc := dynamicconfig.NewMemoryClient()
	// One process, one shard: bound the history service's cache of open
	// executions (read once at start).
	dc.OverrideSetting(dynamicconfig.HistoryCacheHostLevelMaxSize, HistoryCacheSize)
	// The UI and the run lists poll visibility often.
	dc.OverrideSetting(dynamicconfig.FrontendMaxNamespaceVisibilityRPSPerInstance, 100)
	// Until start-up registered the search attributes, every search
	// attribute lookup re-reads them, so attributes added at runtime are
	// usable at once. It costs a database read per lookup (every start,
	// describe and listing), so Start turns it off afterwards; a server
	// started with NoSearchAttributes keeps it on.
	dc.OverrideSetting(dynamicconfig.ForceSearchAttributesCacheRefreshOnRead, true)
	// With the refresh on, bursts of run listings must not hit the
	// frontend's persistence rate limit (ResourceExhausted) on a local
	// server.
	dc.OverrideSetting(dynamicconfig.FrontendPersistenceMaxQPS, 20000)
	if !clusterNode {
		// A server alone has one matching service and a worker or a few
		// per task queue: Temporal's four partitions per queue would
		// spread their tasks and pollers over four queues, forwarding
		// between them. A cluster node keeps the default, as production
		// clusters do.
		dc.OverrideSetting(dynamicconfig.MatchingNumTaskqueueReadPartitions, 1)
		dc.OverrideSetting(dynamicconfig.MatchingNumTaskqueueWritePartitions, 1)
		// A Worker Deployment version that is no longer current reports
		// "drained" once visibility lists no open run pinned to it
		// (docs/upgrades.md): Temporal waits 3 minutes for visibility to
		// catch up and checks every 3 minutes, for stores that lag
		// seconds; this server's SQL visibility lags milliseconds, so an
		// author sees a version drained within seconds.
		dc.OverrideSetting(dynamicconfig.VersionDrainageStatusVisibilityGracePeriod, DrainageGracePeriod)
		dc.OverrideSetting(dynamicconfig.VersionDrainageStatusRefreshInterval, DrainageRefreshInterval)
	}
	return dc
}

// DrainageGracePeriod and DrainageRefreshInterval are the embedded
// server's (not a cluster node's) matching.wv.VersionDrainageStatus*
// settings: how long after a Worker Deployment version stops being
// current its drainage is first judged, and how often it is judged again.
const (
	DrainageGracePeriod     = 5 * time.Second
	DrainageRefreshInterval = 5 * time.Second
)

// stopForcedRefresh turns ForceSearchAttributesCacheRefreshOnRead off once
// the namespace registry knows every run search attribute: a listing that
// names them all is the probe (it fails with InvalidArgument "no mapping
// defined for search attribute" until the registry's periodic refresh saw
// attributes added at start-up). If the probe does not pass within
// settleTimeout the refresh stays on, which is slower but correct.
func (s *Server) stopForcedRefresh(ctx context.Context, c client.Client) error {
	restore := s.dc.OverrideSetting(dynamicconfig.ForceSearchAttributesCacheRefreshOnRead, false)
	terms := make([]string, 0, len(signals.SearchAttributes))
	for _, name := range signals.SearchAttributes {
		terms = append(terms, name+" = 'openwop-probe'")
	}
	query := strings.Join(terms, " AND ")
	deadline := time.Now().Add(settleTimeout)
	for {
		_, err := c.ListWorkflow(ctx, &workflowservice.ListWorkflowExecutionsRequest{Namespace: s.namespace, PageSize: 1, Query: query})
		if err == nil {
			return nil
		}
		var inv *serviceerror.InvalidArgument
		if !errors.As(err, &inv) || time.Now().After(deadline) {
			restore()
			s.logger.Warn("search attributes not visible without the forced refresh; keeping it on", zap.Error(err))
			return nil
		}
		select {
		case <-ctx.Done():
			restore()
			return fmt.Errorf("devtemporal: search attributes not visible: %w", errors.Join(err, ctx.Err()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
