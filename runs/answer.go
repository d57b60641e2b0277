package runs

import (
	"github.com/openwop/temporal-mcp/signals"
	"github.com/openwop/temporal-mcp/signals/answers"
)

// AnswerError is the refusal of an answer that does not fit its question.
//
// Deprecated: use answers.Error (package signals/answers), the contract's
// rule, which the run service applies; this alias is the same type.
type AnswerError = answers.Error

// CheckAnswer checks a resolution against the interrupt it answers.
//
// Deprecated: use answers.Check (package signals/answers), the contract's
// rule, which the run service applies.
func CheckAnswer(it signals.Interrupt, r signals.Resolution) error { return answers.Check(it, r) }
