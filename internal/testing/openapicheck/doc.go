// Package openapicheck checks HTTP exchanges against an OpenAPI 3.1
// document with a real validator (github.com/pb33f/libopenapi-validator):
// the document against the OpenAPI meta-schema, and each response against
// the operation it answers (status, content type, headers, body schema).
// Tests wrap their HTTP client's transport with it so that every response
// they receive is checked.
//
// It is for tests: the server binaries do not import it.
package openapicheck
