package strictyaml

import (
	"strings"
	"testing"
)

type doc struct {
	Name string `json:"name"`
}

// TestRedact: a typo is named; a line of another kind of file is not.
func TestRedact(t *testing.T) {
	var d doc
	err := Unmarshal([]byte("title: x\n"), &d)
	if err == nil || !strings.Contains(err.Error(), `unknown field "title"`) {
		t.Errorf("typo: %v", err)
	}
	shadow := "root:$6$saltsalt$hashhash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"
	err = Unmarshal([]byte(shadow), &d)
	if err == nil || strings.Contains(err.Error(), "19000") || strings.Contains(err.Error(), "daemon") || !strings.Contains(err.Error(), "not shown") {
		t.Errorf("password file: %v", err)
	}
	if err := Unmarshal([]byte("name: ok\n"), &d); err != nil || d.Name != "ok" {
		t.Errorf("valid: %v %+v", err, d)
	}
}

// TestOneDocument: a second YAML document or a trailing JSON value is an
// error, not dropped in silence.
func TestOneDocument(t *testing.T) {
	var d doc
	for _, in := range []string{"name: a\n---\nname: b\n", `{"name": "a"} {"name": "b"}`} {
		if err := Unmarshal([]byte(in), &d); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	for _, in := range []string{"name: a\n", "---\nname: a\n", "", "# only a comment\n", `{"name": "a"}`} {
		if err := Unmarshal([]byte(in), &d); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// TestNumbersOutOfRange: a number beyond a float64's range is named as
// such with its line (it was reported as "cannot unmarshal string"); a
// quoted one is a string, and small or negative exponents are numbers.
func TestNumbersOutOfRange(t *testing.T) {
	var v struct {
		Name string  `json:"name"`
		X    float64 `json:"x"`
	}
	for _, in := range []string{"name: a\nx: 1e309\n", "name: a\nx: -2e400\n", `{"name": "a", "x": 1e309}`} {
		err := Unmarshal([]byte(in), &v)
		if err == nil || !strings.Contains(err.Error(), "a number beyond the range of a 64-bit float") || !strings.Contains(err.Error(), "line ") {
			t.Errorf("%q: %v", in, err)
		}
	}
	for _, in := range []string{"name: \"1e309\"\nx: 1\n", "name: a\nx: 1e-400\n", "name: a\nx: 1.7e308\n"} {
		if err := Unmarshal([]byte(in), &v); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}
