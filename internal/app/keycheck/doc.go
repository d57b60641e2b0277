// Package keycheck tells when replicas of the server that share one
// Temporal namespace hold different MRTR keys (OPENWOP_MRTR_KEY, or the key
// each generated in its own data directory): requestStates, list cursors
// and idempotency keys one of them issued would then not hold on another.
//
// Replicas meet in Temporal: each publishes, at start, the fingerprint of
// its key (an HMAC of a fixed string under the key, never the key) in the
// memo of one well-known workflow of the namespace, and compares it first
// with the fingerprint already there. The record is the latest replica's:
// a replica that starts with another key than the one before it is told
// so, whether the two still run or the key was changed on purpose.
package keycheck
