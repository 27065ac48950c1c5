package podrunner

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// volumeSyncInterval is how often a running pod's Secret, ConfigMap and
// projected volumes are brought up to date with their sources. The kubelet
// takes up to about a minute; the runner is quicker so tests wait less,
// and no quicker than this, since every sync reads each source from the
// apiserver and a test cluster runs dozens of pods.
const volumeSyncInterval = 30 * time.Second

// stagedSuffix names the directory a volume's new contents are written to
// before they replace the old; volume names are DNS labels and hold no
// dot, so it never meets another volume.
const stagedSuffix = ".staged"

// syncVolumes keeps a running pod's Secret, ConfigMap and projected volumes
// current until ctx ends, as the kubelet does: a renewed certificate or a
// changed trust root reaches the files the processes read, and programs
// that reload them, such as OVS, see the change without a restart.
func (r *podRun) syncVolumes(ctx context.Context) {
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		for _, name := range syncPodVolumes(ctx, r.spec, r.h.src, r.dir) {
			r.log.V(1).Info("volume updated from its source", "volume", name)
		}
	}, volumeSyncInterval)
}

// syncPodVolumes rewrites the files of every Secret, ConfigMap and
// projected volume whose source changed and returns the names of the
// volumes it changed. Like the kubelet it leaves alone a volume some
// container mounts by subPath, and keeps the old files while a source
// cannot be read. Projected service account tokens are not renewed.
func syncPodVolumes(ctx context.Context, pod *corev1.Pod, src objectSource, podDir string) []string {
	bySubPath := map[string]bool{}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for _, c := range cs {
			for _, m := range c.VolumeMounts {
				if m.SubPath != "" || m.SubPathExpr != "" {
					bySubPath[m.Name] = true
				}
			}
		}
	}
	var changed []string
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		fill := objectFill(ctx, src, pod, v)
		if fill == nil || bySubPath[v.Name] || requestsToken(v) || ctx.Err() != nil {
			continue
		}
		dir := filepath.Join(podDir, volumesDirName, v.Name)
		ok, err := syncVolume(dir, fill)
		if err == nil && ok {
			changed = append(changed, v.Name)
		}
	}
	return changed
}

// requestsToken reports whether a projected volume holds a service
// account token. Its token is kept: a fresh one on every sync would be a
// TokenRequest each time, where the kubelet asks only near expiry.
func requestsToken(v *corev1.Volume) bool {
	if v.Projected == nil {
		return false
	}
	for _, s := range v.Projected.Sources {
		if s.ServiceAccountToken != nil {
			return true
		}
	}
	return false
}

// syncVolume writes the volume afresh beside dir and moves each file that
// differs into dir by rename, so a reader sees the old file or the new one,
// never a part of either; files the source no longer has are removed. It
// reports whether anything changed.
func syncVolume(dir string, fill func(w *projectionWriter) error) (bool, error) {
	staged := dir + stagedSuffix
	// A leftover is replaced on the next sync.
	defer os.RemoveAll(staged)
	files, err := writeProjection(staged, fill)
	if err != nil {
		return false, err
	}
	if _, err := os.Stat(dir); err != nil {
		// Not materialised (yet, or any more): nothing to keep current.
		return false, nil
	}
	changed := false
	want := map[string]bool{}
	for _, rel := range files {
		want[filepath.FromSlash(rel)] = true
		from, to := filepath.Join(staged, filepath.FromSlash(rel)), filepath.Join(dir, filepath.FromSlash(rel))
		if same(from, to) {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(to), volumeDirMode); err != nil {
			return changed, err
		}
		if err := os.Rename(from, to); err != nil {
			return changed, err
		}
		changed = true
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil || want[rel] {
			return err
		}
		changed = true
		return os.Remove(p)
	})
	return changed, err
}

// same reports whether two files hold the same bytes and mode.
func same(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	if err != nil || sa.Mode() != sb.Mode() {
		return false
	}
	da, errA := os.ReadFile(a)
	db, errB := os.ReadFile(b)
	return errA == nil && errB == nil && bytes.Equal(da, db)
}
