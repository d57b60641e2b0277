package openapicheck

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	liberrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	"github.com/pb33f/libopenapi/datamodel/high/base"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// Checker validates responses against one OpenAPI document.
type Checker struct {
	model     *v3.Document
	opts      *config.ValidationOptions
	validator validator.Validator
	// errorSchema is components.schemas[ErrorSchema], the body of answers
	// to routes the document does not describe.
	errorSchema *base.Schema
	schemas     schema_validation.SchemaValidator
}

// ErrorSchema names the component schema that answers to undocumented
// routes (404, 405) must satisfy.
const ErrorSchema = "Error"

// New parses spec, checks it against the OpenAPI meta-schema of its version
// and returns its Checker. An invalid document is an error listing what is
// wrong.
func New(spec []byte) (*Checker, error) {
	doc, err := libopenapi.NewDocument(spec)
	if err != nil {
		return nil, fmt.Errorf("openapicheck: parse the document: %w", err)
	}
	if v := doc.GetVersion(); !strings.HasPrefix(v, "3.1") {
		return nil, fmt.Errorf("openapicheck: the document is OpenAPI %q, want 3.1", v)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("openapicheck: build the model: %w", err)
	}
	opts := []config.Option{config.WithFormatAssertions()}
	v, errs := validator.NewValidator(doc, opts...)
	if len(errs) > 0 {
		return nil, fmt.Errorf("openapicheck: %w", errors.Join(errs...))
	}
	if ok, verrs := v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("openapicheck: the document is not valid OpenAPI: %w", joinValidation(verrs))
	}
	c := &Checker{model: &m.Model, opts: config.NewValidationOptions(opts...), validator: v,
		schemas: schema_validation.NewSchemaValidator(opts...)}
	if m.Model.Components != nil && m.Model.Components.Schemas != nil {
		if p := m.Model.Components.Schemas.GetOrZero(ErrorSchema); p != nil {
			c.errorSchema = p.Schema()
		}
	}
	if c.errorSchema == nil {
		return nil, fmt.Errorf("openapicheck: the document has no components.schemas.%s", ErrorSchema)
	}
	return c, nil
}

// CheckResponse validates the response (status, header, body) that req
// received. A route the document describes must answer as its operation
// says; any other route must answer 404 or 405 with a JSON body valid
// against the Error schema (or a 403 or 415 of the request gate). HEAD answers are checked for their status only.
func (c *Checker) CheckResponse(req *http.Request, status int, header http.Header, body []byte) error {
	req = matchable(req)
	if req.Method == http.MethodHead {
		get := req.Clone(req.Context())
		get.Method = http.MethodGet
		req = get
		if pathItem, errs, _ := paths.FindPath(req, c.model, c.opts); pathItem == nil || len(errs) > 0 {
			return c.checkUndocumented(req, status, header, nil)
		}
		return nil
	}
	pathItem, errs, _ := paths.FindPath(req, c.model, c.opts)
	if pathItem == nil || len(errs) > 0 || helpers.ExtractOperation(req, pathItem) == nil {
		return c.checkUndocumented(req, status, header, body)
	}
	resp := &http.Response{StatusCode: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Request: req}
	if ok, verrs := c.validator.ValidateHttpResponse(req, resp); !ok {
		return fmt.Errorf("%s %s answered %d %s: %w", req.Method, req.URL.Path, status, body, joinValidation(verrs))
	}
	return nil
}

// undocumentedStatus are the answers a route the document does not
// describe may give: no such route or method, or a refusal of the request
// gate that comes before routing (403, 415).
var undocumentedStatus = []int{http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusForbidden, http.StatusUnsupportedMediaType}

// checkUndocumented checks the answer to a route the document does not
// describe: one of undocumentedStatus, application/json, an Error body.
func (c *Checker) checkUndocumented(req *http.Request, status int, header http.Header, body []byte) error {
	if !slices.Contains(undocumentedStatus, status) {
		return fmt.Errorf("%s %s is not in the OpenAPI document, yet it answered %d", req.Method, req.URL.Path, status)
	}
	if body == nil {
		return nil
	}
	if mt, _, _ := mime.ParseMediaType(header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("%s %s answered %d with Content-Type %q, want application/json", req.Method, req.URL.Path, status, header.Get("Content-Type"))
	}
	if ok, verrs := c.schemas.ValidateSchemaBytes(c.errorSchema, body); !ok {
		return fmt.Errorf("%s %s answered %d %s, not an %s: %w", req.Method, req.URL.Path, status, body, ErrorSchema, joinValidation(verrs))
	}
	return nil
}

// matchable returns req with a run id sent percent-encoded
// (tenant%2Fopaque, which the server accepts) in its projected form
// (tenant~2Fopaque), so that it matches its single path segment.
func matchable(req *http.Request) *http.Request {
	escaped := req.URL.EscapedPath()
	if !strings.Contains(strings.ToUpper(escaped), "%2F") {
		return req
	}
	projected := strings.NewReplacer("%2F", "~2F", "%2f", "~2F").Replace(escaped)
	p, err := url.PathUnescape(projected)
	if err != nil {
		return req
	}
	out := req.Clone(req.Context())
	out.URL.Path, out.URL.RawPath = p, ""
	return out
}

// Transport returns a RoundTripper that sends through next
// (http.DefaultTransport when nil) and checks every response with
// CheckResponse, reporting a violation with t.Errorf. The response body is
// read whole and handed on unchanged.
func (c *Checker) Transport(t testing.TB, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err != nil {
			return resp, err
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("openapicheck: read the response body: %w", err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		if req.Method == http.MethodHead {
			body = nil
		}
		if err := c.CheckResponse(req, resp.StatusCode, resp.Header, body); err != nil {
			t.Errorf("response does not match the OpenAPI document: %v", err)
		}
		return resp, nil
	})
}

// Client is an *http.Client whose transport is c.Transport(t, nil).
func (c *Checker) Client(t testing.TB) *http.Client {
	return &http.Client{Transport: c.Transport(t, nil)}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// joinValidation joins the validator's errors, with their schema failures.
func joinValidation(verrs []*liberrors.ValidationError) error {
	var errs []error
	for _, e := range verrs {
		msg := e.Message
		if e.Reason != "" {
			msg += ": " + e.Reason
		}
		for _, f := range e.SchemaValidationErrors {
			msg += fmt.Sprintf("; %s at %s (%s)", f.Reason, f.FieldPath, f.KeywordLocation)
		}
		errs = append(errs, errors.New(msg))
	}
	return errors.Join(errs...)
}
