package signals_test

import (
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/signals"
)

func TestPublished(t *testing.T) {
	small := signals.Interrupt{ID: "acme/r-i1", NodeID: "review", Kind: signals.KindApproval, Title: "Publish?"}
	big := small
	big.Description = strings.Repeat("x", signals.MaxPublishedInterrupts)
	base := signals.Snapshot{Status: signals.StatusWaitingApproval, StatusMessage: signals.StatusWaitingApproval.Message(),
		CancelReason: "", LastSequence: 4, Resolved: []signals.Resolved{{}}}
	tests := []struct {
		name       string
		interrupts []signals.Interrupt
		listed     int
	}{
		{"none open", nil, 0},
		{"small interrupts listed", []signals.Interrupt{small, small}, 2},
		{"interrupts over the bound left out", []signals.Interrupt{small, big}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := base
			s.Interrupts = tt.interrupts
			p := s.Published()
			if p.Status != s.Status || p.StatusMessage != s.StatusMessage || p.LastSequence != 4 ||
				p.OpenInterrupts != len(tt.interrupts) || len(p.Interrupts) != tt.listed {
				t.Fatalf("Published() = %+v", p)
			}
		})
	}
}
