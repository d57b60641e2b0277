// Package auth authenticates HTTP callers: static Bearer API keys, and
// OAuth access tokens of configured issuers (OAuth; docs/oauth.md).
//
// Every key is bound to one tenant and one subject. The Subject of a request
// comes only from its credential: never from a body, _meta or a query
// parameter. With no keys configured (development) every caller is the same
// anonymous local subject, see Anonymous.
//
// Keys are configured by environment:
//
//	OPENWOP_API_KEYS="key1=tenantA:subjectA,key2=tenantB:subjectB"
//	OPENWOP_API_KEYS_FILE=/etc/openwop/keys.json
//
// The file holds a JSON array of {"key", "tenant", "subject"} objects. Both
// sources may be set; their keys are merged and a key may appear only once.
package auth
