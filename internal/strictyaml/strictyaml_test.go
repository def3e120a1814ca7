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
