package podrunner

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// File modes of materialised volumes. Secret files are readable by their
// owner only whatever the pod asks for: the process runs as the runner's
// user, so group and other bits would only hand the credentials to other
// users of this host.
const (
	secretFileMode    os.FileMode = 0o600
	secretDirMode     os.FileMode = 0o700
	defaultFileMode   os.FileMode = 0o644
	volumeDirMode     os.FileMode = 0o755
	volumesDirName                = "volumes"
	hostPathsDirName              = "host"
	claimsDirName                 = "claims"
	podsDirName                   = "pods"
	containersDirName             = "containers"
	logsDirName                   = "logs"
)

// objectSource reads the Secrets and ConfigMaps a pod refers to. The runner
// reads them from the API server when a pod starts, not from an informer
// cache, so that a Secret created just before its pod is found.
type objectSource interface {
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	ConfigMap(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
}

// volume is a pod volume as materialised.
type volume struct {
	kind  VolumeKind
	dir   string
	files []string
}

// materialiseVolumes writes every volume of a pod: Secrets, ConfigMaps,
// projected and downwardAPI volumes as files under podDir, emptyDirs as
// directories there, hostPaths under hostRoot, the node's own root, so
// that two nodes never share one, and claims under claimRoot.
func materialiseVolumes(ctx context.Context, pod *corev1.Pod, src objectSource, podDir, hostRoot, claimRoot string) (map[string]volume, error) {
	vols := map[string]volume{}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		dir := filepath.Join(podDir, volumesDirName, v.Name)
		var (
			files []string
			kind  VolumeKind
			err   error
		)
		switch {
		case v.Secret != nil:
			kind = VolumeSecret
			files, err = writeProjection(dir, objectFill(ctx, src, pod, v))
		case v.ConfigMap != nil:
			kind = VolumeConfigMap
			files, err = writeProjection(dir, objectFill(ctx, src, pod, v))
		case v.Projected != nil:
			kind = VolumeProjected
			files, err = writeProjection(dir, objectFill(ctx, src, pod, v))
		case v.DownwardAPI != nil:
			kind = VolumeDownwardAPI
			files, err = writeProjection(dir, func(w *projectionWriter) error {
				return w.downwardAPI(pod, v.DownwardAPI.Items, v.DownwardAPI.DefaultMode)
			})
		case v.HostPath != nil:
			kind = VolumeHostPath
			dir = hostPathDir(hostRoot, v.HostPath.Path)
			err = ensureHostPath(dir, v.HostPath.Type)
		case v.EmptyDir != nil:
			kind = VolumeEmptyDir
			err = os.MkdirAll(dir, volumeDirMode)
		case v.PersistentVolumeClaim != nil:
			kind = VolumeClaim
			dir = claimDir(claimRoot, pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			err = os.MkdirAll(dir, volumeDirMode)
		default:
			kind = VolumeOther
			err = os.MkdirAll(dir, volumeDirMode)
		}
		if err != nil {
			return nil, fmt.Errorf("volume %s: %w", v.Name, err)
		}
		vols[v.Name] = volume{kind: kind, dir: dir, files: files}
	}
	return vols, nil
}

// objectFill writes a Secret, ConfigMap or projected volume from its
// sources; it is nil for any other volume.
func objectFill(ctx context.Context, src objectSource, pod *corev1.Pod, v *corev1.Volume) func(w *projectionWriter) error {
	switch {
	case v.Secret != nil:
		return func(w *projectionWriter) error {
			return w.secret(ctx, src, pod.Namespace, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional)
		}
	case v.ConfigMap != nil:
		return func(w *projectionWriter) error {
			return w.configMap(ctx, src, pod.Namespace, v.ConfigMap.Name, v.ConfigMap.Items, v.ConfigMap.DefaultMode, v.ConfigMap.Optional)
		}
	case v.Projected != nil:
		return func(w *projectionWriter) error { return w.projected(ctx, src, pod, v.Projected) }
	}
	return nil
}

// claimDir is the directory that stands in for a claim's volume: one per
// namespace and claim name under the node, outside every pod's directory,
// so that a pod recreated under its name, a StatefulSet member, finds what
// its predecessor stored, as it would on the claim's volume. The runner
// does not watch claims, so the directory outlives a deleted claim until
// the node's state is removed, like a volume that is retained. Claim and
// namespace names hold no "_", which keeps the key unambiguous.
func claimDir(claimRoot, namespace, claim string) string {
	return filepath.Join(claimRoot, namespace+"_"+path.Base(path.Clean("/"+claim)))
}

// hostPathDir maps a hostPath to its place under the node's root. Cleaning
// it as an absolute path first keeps ".." from climbing out of the root.
func hostPathDir(hostRoot, p string) string {
	return filepath.Join(hostRoot, filepath.FromSlash(path.Clean("/"+p)))
}

// ensureHostPath creates a hostPath's stand-in: a file for the File types, a
// directory otherwise. Sockets and devices cannot be provided; their path is
// left for the program to create.
func ensureHostPath(p string, t *corev1.HostPathType) error {
	kind := corev1.HostPathUnset
	if t != nil {
		kind = *t
	}
	switch kind {
	case corev1.HostPathFile, corev1.HostPathFileOrCreate:
		if err := os.MkdirAll(filepath.Dir(p), volumeDirMode); err != nil {
			return err
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, defaultFileMode)
		if err != nil {
			return err
		}
		return f.Close()
	case corev1.HostPathSocket, corev1.HostPathCharDev, corev1.HostPathBlockDev:
		return os.MkdirAll(filepath.Dir(p), volumeDirMode)
	default:
		return os.MkdirAll(p, volumeDirMode)
	}
}

// projectionWriter writes the files of one Secret, ConfigMap, projected or
// downwardAPI volume and remembers their names.
type projectionWriter struct {
	dir       string
	hasSecret bool
	files     map[string]bool
}

// writeProjection replaces dir with the files fill writes. Starting from an
// empty directory means a key removed since an earlier attempt is gone too.
func writeProjection(dir string, fill func(w *projectionWriter) error) ([]string, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	w := &projectionWriter{dir: dir, files: map[string]bool{}}
	if err := os.MkdirAll(dir, volumeDirMode); err != nil {
		return nil, err
	}
	if err := fill(w); err != nil {
		return nil, err
	}
	if w.hasSecret {
		// The directory lists key names; keep it as private as the files.
		if err := os.Chmod(dir, secretDirMode); err != nil {
			return nil, err
		}
	}
	return slices.Sorted(maps.Keys(w.files)), nil
}

// write stores one file. rel comes from a pod's items, so it is checked to
// stay inside the volume, the same rule the API server applies.
func (w *projectionWriter) write(rel string, data []byte, mode os.FileMode, secret bool) error {
	if rel == "" || path.IsAbs(rel) || strings.HasPrefix(path.Clean(rel), "..") {
		return fmt.Errorf("item path %q must be relative and stay inside the volume", rel)
	}
	if secret {
		w.hasSecret = true
		mode = secretFileMode
	}
	p := filepath.Join(w.dir, filepath.FromSlash(path.Clean(rel)))
	if err := os.MkdirAll(filepath.Dir(p), volumeDirMode); err != nil {
		return err
	}
	if err := os.WriteFile(p, data, mode); err != nil {
		return err
	}
	// WriteFile applies the umask; the pod's mode is what it asked for.
	if err := os.Chmod(p, mode); err != nil {
		return err
	}
	w.files[path.Clean(rel)] = true
	return nil
}

// secret writes a Secret's keys, or only the listed items.
func (w *projectionWriter) secret(ctx context.Context, src objectSource, namespace, name string, items []corev1.KeyToPath, optional *bool) error {
	s, err := src.Secret(ctx, namespace, name)
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading Secret %s: %w", name, err)
	}
	return writeItems(w, "Secret", name, s.Data, items, nil, optional, true)
}

// configMap writes a ConfigMap's keys, or only the listed items.
func (w *projectionWriter) configMap(ctx context.Context, src objectSource, namespace, name string, items []corev1.KeyToPath, defaultMode *int32, optional *bool) error {
	cm, err := src.ConfigMap(ctx, namespace, name)
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ConfigMap %s: %w", name, err)
	}
	data := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	maps.Copy(data, cm.BinaryData)
	return writeItems(w, "ConfigMap", name, data, items, defaultMode, optional, false)
}

// writeItems writes data under its keys, or the listed items under their
// paths. A listed key that is missing is an error unless the source is
// optional, as with the kubelet. Errors name keys, never values.
func writeItems(w *projectionWriter, kind, name string, data map[string][]byte, items []corev1.KeyToPath, defaultMode *int32, optional *bool, secret bool) error {
	mode := fileMode(nil, defaultMode)
	if len(items) == 0 {
		for _, k := range slices.Sorted(maps.Keys(data)) {
			if err := w.write(k, data[k], mode, secret); err != nil {
				return err
			}
		}
		return nil
	}
	for _, item := range items {
		v, ok := data[item.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return fmt.Errorf("key %q not found in %s %s", item.Key, kind, name)
		}
		if err := w.write(item.Path, v, fileMode(item.Mode, defaultMode), secret); err != nil {
			return err
		}
	}
	return nil
}

// fileMode picks an item's mode, then the volume's default, then 0644.
func fileMode(item, volumeDefault *int32) os.FileMode {
	switch {
	case item != nil:
		return os.FileMode(*item) & os.ModePerm
	case volumeDefault != nil:
		return os.FileMode(*volumeDefault) & os.ModePerm
	default:
		return defaultFileMode
	}
}

// tokenIssuer is an objectSource that can also mint a pod's service
// account token, as the kubelet does through the TokenRequest API.
type tokenIssuer interface {
	ServiceAccountToken(ctx context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, error)
}

// projected writes the sources of a projected volume into one directory. A
// service account token is written only when src can issue one; a source
// that cannot (the unit tests' maps) leaves it out, which is all a program
// that never talks to the cluster needs.
func (w *projectionWriter) projected(ctx context.Context, src objectSource, pod *corev1.Pod, p *corev1.ProjectedVolumeSource) error {
	for _, s := range p.Sources {
		var err error
		switch {
		case s.ServiceAccountToken != nil:
			issuer, ok := src.(tokenIssuer)
			if !ok {
				continue
			}
			var token string
			if token, err = issuer.ServiceAccountToken(ctx, pod, s.ServiceAccountToken); err == nil {
				// A token is a credential, kept like a Secret's keys.
				err = w.write(s.ServiceAccountToken.Path, []byte(token), 0, true)
			}
		case s.Secret != nil:
			err = w.secret(ctx, src, pod.Namespace, s.Secret.Name, s.Secret.Items, s.Secret.Optional)
		case s.ConfigMap != nil:
			err = w.configMap(ctx, src, pod.Namespace, s.ConfigMap.Name, s.ConfigMap.Items, p.DefaultMode, s.ConfigMap.Optional)
		case s.DownwardAPI != nil:
			err = w.downwardAPI(pod, s.DownwardAPI.Items, p.DefaultMode)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// downwardAPI writes the fieldRef items of a downward API source; resource
// fields have no meaning for a local process and are skipped.
func (w *projectionWriter) downwardAPI(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, defaultMode *int32) error {
	for _, item := range items {
		if item.FieldRef == nil {
			continue
		}
		v, err := fieldValue(pod, item.FieldRef.FieldPath)
		if err != nil {
			return err
		}
		if err := w.write(item.Path, []byte(v), fileMode(item.Mode, defaultMode), false); err != nil {
			return err
		}
	}
	return nil
}

// containerMounts resolves a container's volumeMounts against the
// materialised volumes. A subPath selects a file or directory inside the
// volume; it must stay inside it.
func containerMounts(c *corev1.Container, vols map[string]volume) (Mounts, error) {
	out := make(Mounts, 0, len(c.VolumeMounts))
	for _, vm := range c.VolumeMounts {
		v, ok := vols[vm.Name]
		if !ok {
			return nil, fmt.Errorf("volumeMount %s names no volume of the pod", vm.Name)
		}
		m := Mount{MountPath: vm.MountPath, HostPath: v.dir, Kind: v.kind, Files: v.files}
		if sub := vm.SubPath; sub != "" {
			if path.IsAbs(sub) || strings.HasPrefix(path.Clean(sub), "..") {
				return nil, fmt.Errorf("volumeMount %s: subPath %q must stay inside the volume", vm.Name, sub)
			}
			sub = path.Clean(sub)
			m.HostPath = filepath.Join(v.dir, filepath.FromSlash(sub))
			m.Files = nil
			for _, f := range v.files {
				if rest, ok := strings.CutPrefix(f, sub+"/"); ok {
					m.Files = append(m.Files, rest)
				}
			}
			// A subPath into an emptyDir or hostPath names a directory the
			// program expects to exist, unless it names a file we wrote.
			if v.kind == VolumeEmptyDir || v.kind == VolumeHostPath || v.kind == VolumeClaim || v.kind == VolumeOther {
				if err := os.MkdirAll(m.HostPath, volumeDirMode); err != nil {
					return nil, err
				}
			}
		}
		out = append(out, m)
	}
	return out, nil
}
