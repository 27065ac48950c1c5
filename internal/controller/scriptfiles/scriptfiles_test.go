package scriptfiles

import (
	"maps"
	"testing"
	"testing/fstest"
)

func TestLoad(t *testing.T) {
	fsys := fstest.MapFS{
		"scripts/a.sh":     {Data: []byte("echo a\n")},
		"scripts/b.sh":     {Data: []byte("echo b\n")},
		"scripts/sub/c.sh": {Data: []byte("nested\n")},
		"other.sh":         {Data: []byte("outside\n")},
	}
	got := Load(fsys, "scripts")
	want := map[string]string{"a.sh": "echo a\n", "b.sh": "echo b\n"}
	if !maps.Equal(got, want) {
		t.Errorf("Load = %v, want %v", got, want)
	}
}

func TestHash(t *testing.T) {
	base := map[string]string{"a.sh": "echo a", "b.sh": "echo b"}
	for _, tc := range []struct {
		name  string
		data  map[string]string
		equal bool
	}{
		{name: "the same data", data: map[string]string{"b.sh": "echo b", "a.sh": "echo a"}, equal: true},
		{name: "a changed script", data: map[string]string{"a.sh": "echo A", "b.sh": "echo b"}},
		{name: "text moved between files", data: map[string]string{"a.sh": "echo aecho b", "b.sh": ""}},
		{name: "a renamed script", data: map[string]string{"a.sh": "echo a", "c.sh": "echo b"}},
	} {
		if got := Hash(tc.data) == Hash(base); got != tc.equal {
			t.Errorf("%s: equal hashes = %v, want %v", tc.name, got, tc.equal)
		}
	}
	// The value pods already carry: the hash must not change under them.
	if got := Hash(map[string]string{"x": "y"}); got != "7055937302e30e9d" {
		t.Errorf("Hash = %s; a new value rolls every pod that carries the old one", got)
	}
}
