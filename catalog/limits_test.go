package catalog_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/openwop/temporal-mcp/catalog"
)

func TestCheckNumbers(t *testing.T) {
	long := "1" + strings.Repeat("0", 309)
	tests := []struct {
		name, raw, wantPath string // wantPath "-": no error
	}{
		{"no numbers", `{"a":"b","c":[true,false,null]}`, "-"},
		{"plain numbers", `{"a":1,"b":-2.5,"c":[0.125,1234567890123]}`, "-"},
		{"exponent in range", `{"a":1e300,"b":-2.5E-300}`, "-"},
		{"an e inside a string", `{"a":"1e999","b":"say \"1e999\""}`, "-"},
		{"300 digits", `{"a":` + strings.Repeat("9", 300) + `}`, "-"},
		{"exponent overflow", `{"a":{"b":[1,1e309]}}`, "a.b[1]"},
		{"negative exponent overflow", `{"x":-1.5E+400}`, "x"},
		{"310 digits", `{"big":` + long + `}`, "big"},
		{"after a string with escapes", `{"s":"\\\"","n":2e999}`, "n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := catalog.CheckNumbers([]byte(tt.raw))
			if tt.wantPath == "-" {
				if err != nil {
					t.Fatalf("CheckNumbers = %v, want nil", err)
				}
				return
			}
			var nre *catalog.NumberRangeError
			if !errors.As(err, &nre) || nre.Path != tt.wantPath {
				t.Fatalf("CheckNumbers = %v, want a NumberRangeError at %q", err, tt.wantPath)
			}
		})
	}
}
