// Package visibility is the one rule by which the project's tests and its
// load harness read Temporal's visibility store: run lists (tasks/list,
// GET /runs, runs.Service.List), counts and search-attribute queries, and
// the catalog's listing of tool publications.
//
// Visibility is eventually consistent with a workflow's own history. A
// run's start, each upsert of its search attributes or memo, and its close
// reach the visibility store a moment after the history records them, on
// every persistence (SQLite keeps visibility in a file and connection of
// its own, PostgreSQL in its own tables, Elasticsearch indexes
// asynchronously). A test that has just seen a run end through a read of
// its history (Await, tasks/get, GET /runs/{id}) may still find it listed
// as running.
//
// The rule: a check that reads visibility never assumes it is current.
// It states the whole state it expects and polls until that state is
// visible or Bound passes (Await, Require); it does not sleep. A check
// that something is absent from visibility is only meaningful for what
// was never written, never for what has just changed.
package visibility
