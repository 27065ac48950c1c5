// Package scriptfiles turns the shell scripts a controller embeds into the
// data of the ConfigMap its pods mount, and hashes that data, so that a
// changed script rolls the pods that run it. It is pure.
package scriptfiles

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"maps"
	"path"
	"slices"
)

// Load returns every file directly in dir of fsys, by base name. The files
// are embedded at build time, so a read that fails is a broken build, not
// a runtime condition, and panics.
func Load(fsys fs.FS, dir string) map[string]string {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		panic(err)
	}
	data := map[string]string{}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			panic(err)
		}
		data[e.Name()] = string(b)
	}
	return data
}

// Hash is 16 hex digits of a SHA-256 over the keys, in order, and their
// values, each followed by a NUL, so that moving text between two files
// changes it too.
func Hash(data map[string]string) string {
	h := sha256.New()
	for _, k := range slices.Sorted(maps.Keys(data)) {
		h.Write([]byte(k + "\x00" + data[k] + "\x00"))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
