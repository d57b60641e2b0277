// Package requeststate seals and opens the MRTR requestState a server hands
// to a task-less client with an InputRequiredResult.
//
// The client echoes the state on its retry, so the state is attacker
// controlled: it is HMAC-SHA256 protected with a server key, bound to the
// principal, the tool name and a digest of the arguments, the run and the
// interrupts it answers, carries an expiry and a nonce, and opens only once
// per process. (Across processes, the interrupts themselves resolve at most
// once, which makes a replay harmless.)
package requeststate
