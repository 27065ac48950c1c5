package podrunner

import (
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// VolumeKind is the source of a materialised volume.
type VolumeKind string

// The volume sources the runner materialises. A persistentVolumeClaim
// (VolumeClaim) is a directory of the node's that outlives the pod, keyed
// by namespace and claim name. Any other source becomes an empty directory
// of kind VolumeOther, so that a pod with, say, a generic ephemeral volume
// still runs.
const (
	VolumeSecret      VolumeKind = "secret"
	VolumeConfigMap   VolumeKind = "configMap"
	VolumeProjected   VolumeKind = "projected"
	VolumeDownwardAPI VolumeKind = "downwardAPI"
	VolumeEmptyDir    VolumeKind = "emptyDir"
	VolumeHostPath    VolumeKind = "hostPath"
	VolumeClaim       VolumeKind = "persistentVolumeClaim"
	VolumeOther       VolumeKind = "other"
)

// Mount is one volume mount of a container, as materialised on this host.
type Mount struct {
	// MountPath is where the container expects the volume.
	MountPath string
	// HostPath is the local directory, or file for a subPath mount of a
	// file, that stands in for MountPath.
	HostPath string
	// Kind is the source of the volume.
	Kind VolumeKind
	// Files are the files the runner wrote for a Secret, ConfigMap,
	// projected or downwardAPI volume, relative to HostPath and sorted.
	Files []string
}

// Mounts are a container's mounts in the order of its volumeMounts.
type Mounts []Mount

// Path translates an absolute container path to the local path that stands
// in for it, using the mount with the longest matching mount path. It
// reports false for a path that no mount contains.
func (m Mounts) Path(p string) (string, bool) {
	if !strings.HasPrefix(p, "/") {
		return "", false
	}
	p = path.Clean(p)
	best := -1
	for i, mount := range m {
		mp := path.Clean(mount.MountPath)
		if mp == "/" || (p != mp && !strings.HasPrefix(p, mp+"/")) {
			continue
		}
		if best < 0 || len(mp) > len(path.Clean(m[best].MountPath)) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	rest := strings.TrimPrefix(p, path.Clean(m[best].MountPath))
	return m[best].HostPath + filepath.FromSlash(rest), true
}

// Translate rewrites every mount path that appears in s, for example in
// "--config-file=/etc/nova/nova.conf" or in a shell script, to its local
// path. A mount path counts only as a whole path element: "/etc/nova" is
// translated in "/etc/nova/x" but not in "/etc/novalis" or "/x/etc/nova".
func (m Mounts) Translate(s string) string {
	type pair struct{ from, to string }
	var pairs []pair
	for _, mount := range m {
		mp := path.Clean(mount.MountPath)
		if mp != "/" && strings.HasPrefix(mp, "/") {
			pairs = append(pairs, pair{mp, mount.HostPath})
		}
	}
	// Longer mount paths first, so a mount nested in another wins.
	sort.SliceStable(pairs, func(i, j int) bool { return len(pairs[i].from) > len(pairs[j].from) })

	var b strings.Builder
	for i := 0; i < len(s); {
		matched := false
		if i == 0 || !isPathByte(s[i-1]) {
			for _, p := range pairs {
				end := i + len(p.from)
				if strings.HasPrefix(s[i:], p.from) && (end == len(s) || s[end] == '/' || !isPathByte(s[end])) {
					b.WriteString(p.to)
					i = end
					matched = true
					break
				}
			}
		}
		if !matched {
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// isPathByte reports whether c can be part of a path, which decides where a
// mount path may start and end inside a longer string.
func isPathByte(c byte) bool {
	switch {
	case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		return true
	}
	return strings.IndexByte("/._-+~@%", c) >= 0
}

// ConfigFiles returns the local paths of the *.conf files of the Secret,
// ConfigMap and projected mounts, in mount order and by name within a
// mount. These are the configuration volumes: an emptyDir or hostPath holds
// whatever the program left there, not configuration it was given.
func (m Mounts) ConfigFiles() []string {
	var out []string
	for _, mount := range m {
		switch mount.Kind {
		case VolumeSecret, VolumeConfigMap, VolumeProjected:
		default:
			continue
		}
		for _, f := range mount.Files {
			if strings.HasSuffix(f, ".conf") {
				out = append(out, filepath.Join(mount.HostPath, filepath.FromSlash(f)))
			}
		}
		// A subPath mount of a single file has no Files; it is the file.
		if len(mount.Files) == 0 && strings.HasSuffix(mount.MountPath, ".conf") {
			out = append(out, mount.HostPath)
		}
	}
	return out
}
