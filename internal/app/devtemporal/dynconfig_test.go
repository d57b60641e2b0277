package devtemporal

import (
	"context"
	"slices"
	"testing"
	"time"

	"go.temporal.io/server/common/dynamicconfig"
)

// forcedRefresh is the current value of ForceSearchAttributesCacheRefreshOnRead.
func forcedRefresh(t *testing.T, s *Server) bool {
	t.Helper()
	v := s.dc.GetValue(dynamicconfig.ForceSearchAttributesCacheRefreshOnRead.Key())
	if len(v) == 0 {
		t.Fatal("ForceSearchAttributesCacheRefreshOnRead is not set")
	}
	b, ok := v[0].Value.(bool)
	if !ok {
		t.Fatalf("ForceSearchAttributesCacheRefreshOnRead = %v", v[0].Value)
	}
	return b
}

// TestForcedRefreshOffAfterStart: once Start registered the search
// attributes the forced refresh is off; a server started without them
// keeps it on, so attributes added later are usable at once.
func TestForcedRefreshOffAfterStart(t *testing.T) {
	for _, tt := range []struct {
		name string
		opts Options
		want bool
	}{
		{"with the search attributes", Options{}, false},
		{"without them", Options{NoSearchAttributes: true}, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			s, err := Start(ctx, tt.opts)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer func() { _ = s.Stop() }()
			if got := forcedRefresh(t, s); got != tt.want {
				t.Fatalf("forced search attribute refresh = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestTaskQueuePartitions: a server alone gives each task queue one
// partition; a cluster node keeps Temporal's default (no override).
func TestTaskQueuePartitions(t *testing.T) {
	for _, tt := range []struct {
		name        string
		clusterNode bool
		want        []any
	}{
		{"alone", false, []any{1}},
		{"cluster node", true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dc := dynamicConfig(tt.clusterNode)
			for _, key := range []dynamicconfig.Key{
				dynamicconfig.MatchingNumTaskqueueReadPartitions.Key(),
				dynamicconfig.MatchingNumTaskqueueWritePartitions.Key(),
			} {
				var got []any
				for _, v := range dc.GetValue(key) {
					got = append(got, v.Value)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("%s = %v, want %v", key, got, tt.want)
				}
			}
		})
	}
}

// TestDrainageSettings: a server alone judges a Worker Deployment
// version's drainage within seconds; a cluster node keeps Temporal's
// defaults.
func TestDrainageSettings(t *testing.T) {
	for _, tt := range []struct {
		name        string
		clusterNode bool
		want        []any
	}{
		{"alone", false, []any{5 * time.Second}},
		{"cluster node", true, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dc := dynamicConfig(tt.clusterNode)
			for _, key := range []dynamicconfig.Key{
				dynamicconfig.VersionDrainageStatusVisibilityGracePeriod.Key(),
				dynamicconfig.VersionDrainageStatusRefreshInterval.Key(),
			} {
				var got []any
				for _, v := range dc.GetValue(key) {
					got = append(got, v.Value)
				}
				if !slices.Equal(got, tt.want) {
					t.Errorf("%s = %v, want %v", key, got, tt.want)
				}
			}
		})
	}
}
