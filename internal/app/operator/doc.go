// Package operator is cmd/server's operator commands: `openwop-server
// versions ...`, the steps of a rollout of versioned workers that
// docs/upgrades.md describes, and `openwop-server nexus create-endpoint`,
// the Nexus endpoint of the tools' Nexus service (docs/nexus.md), run
// against the Temporal server the adapter uses, without the Temporal CLI:
//
//	versions describe [-deployment NAME]           the deployments, or one's versions, drainage and pinned runs
//	versions set-current -deployment NAME -build-id ID
//	versions ramp -deployment NAME -build-id ID -percentage P   (0 ends the ramp)
//	versions move-runs -deployment NAME -build-id ID [-run ID]... [-dry-run]
//	nexus create-endpoint -name NAME -target-namespace NS [-target-task-queue QUEUE]
//
// move-runs moves the open runs pinned to a version (a build whose workers
// are gone) to the deployment's current version with a versioning
// override, each run first checked against the current version's spec:
// its tool must be one that version publishes, and its arguments and
// pre-run inputs must be valid against that spec.
//
// The commands connect as cmd/server does (config.LoadConfig: the
// TEMPORAL_* variables, a profile); without TEMPORAL_ADDRESS (nor a
// profile), to the Temporal server embedded by the cmd/server that holds
// the data directory (OPENWOP_DATA_DIR). They link no Temporal server.
// Exit status: 0 done, 1 failed (or a run refused), 2 a usage error.
package operator
