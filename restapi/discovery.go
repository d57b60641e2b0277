package restapi

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/openwop/temporal-mcp/runs"
)

// Discovery constants.
const (
	// VersionHeader selects the representation of the discovery document.
	VersionHeader = "OpenWOP-Version"
	// OpenWOPVersion is the OpenWOP major.minor this host serves.
	OpenWOPVersion = "2.0"
	// MCPRevision is the MCP revision of the server mount.
	MCPRevision = "2026-07-28"
)

// familyRecord is the common head of a v2 family record.
type familyRecord struct {
	Status  string `json:"status"`
	Since   string `json:"since"`
	Witness string `json:"witness,omitempty"`
}

// mcpFamily advertises the MCP server mount.
type mcpFamily struct {
	familyRecord
	Revisions        []string       `json:"revisions"`
	PreferredVersion string         `json:"preferredVersion"`
	MinimumRevision  string         `json:"minimumRevision"`
	RefreshedAt      time.Time      `json:"refreshedAt"`
	Profiles         []string       `json:"profiles"`
	Features         []string       `json:"features"`
	ServerMount      serverMount    `json:"serverMount"`
	ServerURLs       []string       `json:"serverUrls"`
	MRTR             mrtrParameters `json:"mrtr"`
}

type serverMount struct {
	Transports []string `json:"transports"`
}

type mrtrParameters struct {
	MaxRounds int `json:"maxRounds"`
}

// runListFamily advertises listRuns.
type runListFamily struct {
	familyRecord
	MaxPageSize int      `json:"maxPageSize"`
	Filters     []string `json:"filters"`
}

// interruptFamily advertises interrupt handling and approver enforcement.
type interruptFamily struct {
	familyRecord
	RefKinds []string `json:"refKinds"`
}

// discoveryV2 is the OpenWOP-Version: 2.0 representation.
type discoveryV2 struct {
	OpenWOPVersion string          `json:"openwopVersion"`
	Fixtures       []string        `json:"fixtures"`
	MCP            mcpFamily       `json:"mcp"`
	RunList        runListFamily   `json:"runList"`
	Interrupt      interruptFamily `json:"interrupt"`
}

// discoveryPlain is the representation served without a version header (or
// with a version other than 2.x).
type discoveryPlain struct {
	Name              string    `json:"name"`
	SupportedVersions []string  `json:"supportedVersions"`
	Fixtures          []string  `json:"fixtures"`
	Endpoints         endpoints `json:"endpoints"`
}

type endpoints struct {
	Runs string `json:"runs"`
	MCP  string `json:"mcp"`
}

// discovery serves GET /.well-known/openwop. It needs no credential.
func (h *handler) discovery(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", VersionHeader)
	base := h.externalBase(r)
	fixtures := h.fixtures(r.Context())
	v := strings.TrimSpace(r.Header.Get(VersionHeader))
	if v != "2" && !strings.HasPrefix(v, "2.") {
		writeJSON(w, http.StatusOK, discoveryPlain{
			Name:              "temporal-mcp",
			SupportedVersions: []string{OpenWOPVersion},
			Fixtures:          fixtures,
			Endpoints:         endpoints{Runs: base + "/runs", MCP: base + h.mcpPath},
		})
		return
	}
	w.Header().Set(VersionHeader, OpenWOPVersion)
	supported := familyRecord{Status: "supported", Since: OpenWOPVersion}
	writeJSON(w, http.StatusOK, discoveryV2{
		OpenWOPVersion: OpenWOPVersion,
		Fixtures:       fixtures,
		MCP: mcpFamily{
			familyRecord:     supported,
			Revisions:        []string{MCPRevision},
			PreferredVersion: MCPRevision,
			MinimumRevision:  MCPRevision,
			RefreshedAt:      h.refreshedAt,
			Profiles:         []string{"mcp-" + MCPRevision},
			// "extensions" is how the Tasks extension is advertised here;
			// its name appears only in the mount's server/discover.
			Features:    []string{"server-discover", "mrtr", "cacheable-lists", "extensions"},
			ServerMount: serverMount{Transports: []string{"streamable-http"}},
			ServerURLs:  []string{base + h.mcpPath},
			MRTR:        mrtrParameters{MaxRounds: h.kit.MRTRMaxRounds()},
		},
		RunList: runListFamily{
			familyRecord: supported,
			MaxPageSize:  runs.MaxPageSize,
			Filters:      []string{"workflowId", "status"},
		},
		Interrupt: interruptFamily{
			familyRecord: supported,
			RefKinds:     []string{"principal"},
		},
	})
}

// fixtures are the ids of the OpenWOP conformance fixtures the catalog
// serves now.
func (h *handler) fixtures(ctx context.Context) []string {
	out := []string{}
	tools, err := h.kit.Catalog().Tools(ctx)
	if err != nil {
		h.log.Warn("read the tool catalog for the discovery document", zap.Error(err))
		return out
	}
	for _, t := range tools {
		if spec := t.Spec(); strings.HasPrefix(spec.Name, "conformance-") {
			out = append(out, spec.Name)
		}
	}
	sort.Strings(out)
	return out
}
