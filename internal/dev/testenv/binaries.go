package testenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// binEnv names the directory of the pinned binaries; the Makefile exports it.
const binEnv = "ANVIL_BIN"

// BinDir returns the directory that holds kube-apiserver, etcd and the other
// pinned binaries: $ANVIL_BIN, or bin/ in the repository that contains the
// working directory. It fails with the command that builds them.
func BinDir() (string, error) {
	dir := os.Getenv(binEnv)
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(root, "bin")
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		if _, err := os.Stat(filepath.Join(dir, b)); err != nil {
			return "", fmt.Errorf("%s is missing from %s; run 'make tools' first", b, dir)
		}
	}
	return dir, nil
}

// RepoRoot walks up from the working directory to the directory that holds
// the tool build script, which go test's per-package working directories all
// sit below. Test helpers use it to find the repository's scripts and charts.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "tools", "build.sh")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("cannot find the repository root; set " + binEnv)
		}
		dir = parent
	}
}
