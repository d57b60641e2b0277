package repocheck

import "strings"

// Layer is a package's place in the module, lowest first. A package may
// import packages of its own layer or lower ones, never higher ones.
type Layer int

// The layers of the module, from the contract up to the commands.
const (
	// LayerContract is what mount and workflows share: signals and the
	// run-id grammar.
	LayerContract Layer = iota
	// LayerLibrary holds leaf libraries that know no tool or run:
	// telemetry, admission, the HTTP gate, request state and ownership.
	LayerLibrary
	// LayerDomain holds the concepts tools and runs are made of: auth,
	// the catalog, the activity-side library.
	LayerDomain
	// LayerService holds the author library (workflows), the run
	// service (runs) and its audit trail (audit).
	LayerService
	// LayerEdge holds the protocol edges: the MCP mount and the REST API.
	LayerEdge
	// LayerAssembly wires processes together (internal/app) and holds the
	// example tools.
	LayerAssembly
	// LayerCommand holds the commands and the test-only packages.
	LayerCommand
)

// layers maps a package path relative to the module (or a prefix ending in
// "/") to its layer; the longest match wins.
var layers = map[string]Layer{
	"signals":                        LayerContract,
	"signals/":                       LayerContract,
	"telemetry":                      LayerLibrary,
	"telemetry/":                     LayerLibrary,
	"admission":                      LayerLibrary,
	"internal/httpgate":              LayerLibrary,
	"internal/liveness":              LayerLibrary,
	"mcpmount/internal/ownership":    LayerLibrary,
	"mcpmount/internal/requeststate": LayerLibrary,
	"mcpmount/internal/methods":      LayerLibrary,
	"auth":                           LayerDomain,
	"catalog":                        LayerDomain,
	"activities":                     LayerDomain,
	"workflows":                      LayerService,
	"mcpcall":                        LayerService,
	"mcpcall/":                       LayerService,
	"runs":                           LayerService,
	"audit":                          LayerService,
	"edge":                           LayerEdge,
	"mcpmount":                       LayerEdge,
	"mcpmount/internal/":             LayerEdge,
	"restapi":                        LayerEdge,
	"internal/nexusfront":            LayerEdge,
	"internal/app":                   LayerAssembly,
	"internal/app/":                  LayerAssembly,
	"examples/":                      LayerAssembly,
	"internal/upstream":              LayerAssembly,
	"cmd/":                           LayerCommand,
	"internal/cmd/":                  LayerCommand,
	"internal/testing/":              LayerCommand,

	// The authors' test kit is a library beside the one it tests.
	"workflows/workflowstest": LayerService,
	// The PostgreSQL server of the tests and the load harness.
	"internal/testing/pgtest": LayerCommand,
	// The OpenID provider of the OAuth tests.
	"internal/testing/oidctest": LayerCommand,
	// The conformance fixtures: test tools, which the stock commands'
	// worker (internal/app/toolworker) serves with OPENWOP_FIXTURES=on.
	"internal/testing/conformancetools": LayerAssembly,
}

// publicMayImport lists the internal packages a public package may import:
// leaf libraries that are no part of any contract.
var publicMayImport = map[string]bool{
	"internal/httpgate": true,
	"internal/liveness": true,
}

// authorLibraries are the packages a tool author's program links (a
// prefix ending in "/" covers the packages under it): the author library,
// its test kit, the activity side and the workflow-side MCP client. They share the contract with the
// server (package signals and what is under it), never the server itself:
// serverOnly lists what none of them may depend on, directly or through
// another package.
var authorLibraries = []string{"workflows", "workflows/", "activities", "activities/", "mcpcall", "mcpcall/"}

// serverOnly are the server's packages an author library must not depend
// on: the run service and the protocol edges.
var serverOnly = []string{"runs", "mcpmount", "restapi"}

// isAuthorLibrary reports whether rel is one of authorLibraries.
func isAuthorLibrary(rel string) bool {
	for _, key := range authorLibraries {
		if rel == key || strings.HasSuffix(key, "/") && strings.HasPrefix(rel, key) {
			return true
		}
	}
	return false
}

// serverPackage returns the entry of serverOnly that rel is or is under,
// or "".
func serverPackage(rel string) string {
	for _, name := range serverOnly {
		if rel == name || strings.HasPrefix(rel, name+"/") {
			return name
		}
	}
	return ""
}

// layerOf returns the layer of the package at rel (a path relative to the
// module) and whether one is assigned.
func layerOf(rel string) (Layer, bool) {
	best, found, bestLen := Layer(0), false, -1
	for key, l := range layers {
		match := rel == key || (strings.HasSuffix(key, "/") && strings.HasPrefix(rel, key))
		if match && len(key) > bestLen {
			best, found, bestLen = l, true, len(key)
		}
	}
	return best, found
}

// isInternal reports whether rel is an internal package of the module.
func isInternal(rel string) bool {
	return rel == "internal" || strings.HasPrefix(rel, "internal/") || strings.Contains(rel, "/internal/")
}

// isPublic reports whether rel is a package another module may import and
// that is a library (not a command).
func isPublic(rel string) bool {
	return !isInternal(rel) && !strings.HasPrefix(rel, "cmd/")
}
