package podrunner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A changed source reaches its volume's files, a removed key goes, a
// volume mounted by subPath and a projected token are left as they were,
// and a source that cannot be read keeps the old files.
func TestSyncPodVolumes(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{
			Volumes: []corev1.Volume{
				{Name: "tls", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
				{Name: "pinned", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds"}}},
				{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}},
				{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
					{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
					{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				}}}},
				{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{
				{Name: "tls", MountPath: "/tls"}, {Name: "pinned", MountPath: "/etc/pw", SubPath: "password"}, {Name: "cm", MountPath: "/cm"},
			}}},
		},
	}
	objects := testObjects()
	podDir := filepath.Join(t.TempDir(), "pod")
	if _, err := materialiseVolumes(context.Background(), pod, objects, podDir, t.TempDir(), t.TempDir()); err != nil {
		t.Fatal(err)
	}
	if changed := syncPodVolumes(context.Background(), pod, objects, podDir); len(changed) != 0 {
		t.Errorf("unchanged sources changed %v", changed)
	}

	objects.secrets["ns/creds"] = &corev1.Secret{Data: map[string][]byte{"password": []byte("renewed")}}
	delete(objects.configMaps, "ns/settings")
	changed := syncPodVolumes(context.Background(), pod, objects, podDir)
	if !slices.Equal(changed, []string{"tls"}) {
		t.Errorf("changed %v, want only tls", changed)
	}
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(podDir, volumesDirName, rel))
		if err != nil {
			return "<" + err.Error() + ">"
		}
		return string(b)
	}
	for rel, want := range map[string]string{
		"tls/password":    "renewed",
		"pinned/password": "s3cret",
		"token/password":  "s3cret",
		"cm/region":       "RegionOne",
	} {
		if got := read(rel); got != want {
			t.Errorf("%s = %q, want %q", rel, got, want)
		}
	}
	if _, err := os.Stat(filepath.Join(podDir, volumesDirName, "tls", "user")); !os.IsNotExist(err) {
		t.Errorf("a key the Secret lost is still a file: %v", err)
	}
	if info, err := os.Stat(filepath.Join(podDir, volumesDirName, "tls", "password")); err != nil || info.Mode().Perm() != secretFileMode {
		t.Errorf("the renewed file's mode: %v %v", info, err)
	}
	if entries, _ := os.ReadDir(filepath.Join(podDir, volumesDirName)); slices.ContainsFunc(entries, func(e os.DirEntry) bool {
		return filepath.Ext(e.Name()) == stagedSuffix
	}) {
		t.Errorf("a staged directory is left: %v", entries)
	}
}
