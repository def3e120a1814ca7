package registry

import (
	"reflect"
	"strings"
	"testing"
)

func TestRegistry(t *testing.T) {
	r := New[int]("widget")
	r.Register("b", 2)
	r.Register("a", 1)
	if v, ok := r.Get("a"); !ok || v != 1 {
		t.Errorf("get a: %v %v", v, ok)
	}
	if _, ok := r.Get("c"); ok {
		t.Error("get c")
	}
	if got := r.Names(); !reflect.DeepEqual(got, []string{"a", "b"}) {
		t.Errorf("names %v", got)
	}
	all := r.All()
	all["z"] = 26
	if _, ok := r.Get("z"); ok {
		t.Error("All is not a copy")
	}
	defer func() {
		if p := recover(); p == nil || !strings.Contains(p.(string), "widget a registered twice") {
			t.Errorf("duplicate: %v", p)
		}
	}()
	r.Register("a", 3)
}
