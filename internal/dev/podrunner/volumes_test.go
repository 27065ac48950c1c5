package podrunner

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMaterialiseVolumes writes one pod with every supported source and
// checks the files, their modes, and where hostPaths land.
func TestMaterialiseVolumes(t *testing.T) {
	mode := func(m int32) *int32 { return &m }
	optional := true
	dirType := corev1.HostPathDirectoryOrCreate
	fileType := corev1.HostPathFileOrCreate
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "x"}},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{
			{Name: "all-keys", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", DefaultMode: mode(0o644)}}},
			{Name: "items", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", Items: []corev1.KeyToPath{{Key: "password", Path: "sub/pw", Mode: mode(0o444)}}}}},
			{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, DefaultMode: mode(0o640),
				Items: []corev1.KeyToPath{{Key: "region", Path: "region.txt"}, {Key: "debug", Path: "bin/debug", Mode: mode(0o755)}},
			}}},
			{Name: "absent", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent", Optional: &optional}}},
			{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			{Name: "state", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/nova", Type: &dirType}}},
			{Name: "escape", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/../../etc/x.lock", Type: &fileType}}},
			{Name: "projected", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Items: []corev1.KeyToPath{{Key: "user", Path: "user"}}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Items: []corev1.KeyToPath{{Key: "region", Path: "region"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
			}}}},
			{Name: "pvc", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}},
		}},
	}
	root := t.TempDir()
	podDir, hostRoot, claimRoot := filepath.Join(root, "pods", "p"), filepath.Join(root, "host"), filepath.Join(root, "claims")
	vols, err := materialiseVolumes(context.Background(), pod, testObjects(), podDir, hostRoot, claimRoot)
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		volume string
		kind   VolumeKind
		dir    string
		files  map[string]string      // relative path -> content
		modes  map[string]os.FileMode // relative path -> mode
	}{
		{
			volume: "all-keys", kind: VolumeSecret, dir: filepath.Join(podDir, "volumes", "all-keys"),
			files: map[string]string{"password": "s3cret", "user": "nova"},
			// Secrets stay private to the owner whatever defaultMode says.
			modes: map[string]os.FileMode{"password": 0o600, "user": 0o600, ".": 0o700},
		},
		{
			volume: "items", kind: VolumeSecret, dir: filepath.Join(podDir, "volumes", "items"),
			files: map[string]string{"sub/pw": "s3cret"},
			modes: map[string]os.FileMode{"sub/pw": 0o600},
		},
		{
			volume: "cm", kind: VolumeConfigMap, dir: filepath.Join(podDir, "volumes", "cm"),
			files: map[string]string{"region.txt": "RegionOne", "bin/debug": "true"},
			modes: map[string]os.FileMode{"region.txt": 0o640, "bin/debug": 0o755},
		},
		{volume: "absent", kind: VolumeSecret, dir: filepath.Join(podDir, "volumes", "absent"), files: map[string]string{}},
		{volume: "scratch", kind: VolumeEmptyDir, dir: filepath.Join(podDir, "volumes", "scratch")},
		{volume: "state", kind: VolumeHostPath, dir: filepath.Join(hostRoot, "var", "lib", "nova")},
		{volume: "escape", kind: VolumeHostPath, dir: filepath.Join(hostRoot, "etc", "x.lock")},
		{
			volume: "projected", kind: VolumeProjected, dir: filepath.Join(podDir, "volumes", "projected"),
			files: map[string]string{"user": "nova", "region": "RegionOne", "name": "p"},
			modes: map[string]os.FileMode{"user": 0o600, "region": 0o644},
		},
		// A claim lives outside the pod's directory, keyed by namespace
		// and claim, so that the next pod of that name finds its data.
		{volume: "pvc", kind: VolumeClaim, dir: filepath.Join(claimRoot, "ns_c")},
	}
	for _, tt := range tests {
		t.Run(tt.volume, func(t *testing.T) {
			v := vols[tt.volume]
			if v.kind != tt.kind || v.dir != tt.dir {
				t.Fatalf("volume = %s at %s, want %s at %s", v.kind, v.dir, tt.kind, tt.dir)
			}
			if _, err := os.Stat(v.dir); err != nil {
				t.Fatal(err)
			}
			if tt.files != nil {
				var want []string
				for f, content := range tt.files {
					want = append(want, f)
					got, err := os.ReadFile(filepath.Join(v.dir, f))
					if err != nil || string(got) != content {
						t.Errorf("%s = %q, %v; want %q", f, got, err, content)
					}
				}
				if len(want) > 0 || len(v.files) > 0 {
					slices.Sort(want)
					if !reflect.DeepEqual(v.files, want) {
						t.Errorf("files = %v, want %v", v.files, want)
					}
				}
			}
			for f, m := range tt.modes {
				fi, err := os.Stat(filepath.Join(v.dir, f))
				if err != nil {
					t.Fatal(err)
				}
				if fi.Mode().Perm() != m {
					t.Errorf("%s mode = %o, want %o", f, fi.Mode().Perm(), m)
				}
			}
		})
	}
	if fi, err := os.Stat(filepath.Join(hostRoot, "etc", "x.lock")); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("a FileOrCreate hostPath is no file: %v", err)
	}
}

// TestMaterialiseVolumesErrors pins the messages: they end up in pod
// status, so they must name keys and objects and never values.
func TestMaterialiseVolumesErrors(t *testing.T) {
	tests := []struct {
		name    string
		volume  corev1.VolumeSource
		wantErr string
	}{
		{"missing secret", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "absent"}}, `volume v: reading Secret absent: secrets "absent" not found`},
		{"missing key", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", Items: []corev1.KeyToPath{{Key: "token", Path: "t"}}}}, `volume v: key "token" not found in Secret creds`},
		{"escaping item", corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "creds", Items: []corev1.KeyToPath{{Key: "user", Path: "../x"}}}}, `volume v: item path "../x" must be relative and stay inside the volume`},
		{"missing config map", corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}}}, `volume v: reading ConfigMap absent: configmaps "absent" not found`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "v", VolumeSource: tt.volume}}}}
			_, err := materialiseVolumes(context.Background(), pod, testObjects(), t.TempDir(), t.TempDir(), t.TempDir())
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestContainerMounts(t *testing.T) {
	root := t.TempDir()
	vols := map[string]volume{
		"config":  {kind: VolumeSecret, dir: root + "/v/config", files: []string{"ca.crt", "conf.d/a.conf", "nova.conf"}},
		"scratch": {kind: VolumeEmptyDir, dir: root + "/v/scratch"},
	}
	c := &corev1.Container{VolumeMounts: []corev1.VolumeMount{
		{Name: "config", MountPath: "/etc/nova/compute-config"},
		{Name: "config", MountPath: "/etc/nova/nova.conf", SubPath: "nova.conf"},
		{Name: "config", MountPath: "/etc/nova/conf.d", SubPath: "conf.d"},
		{Name: "scratch", MountPath: "/var/lib/nova/tmp", SubPath: "tmp"},
	}}
	got, err := containerMounts(c, vols)
	if err != nil {
		t.Fatal(err)
	}
	want := Mounts{
		{MountPath: "/etc/nova/compute-config", HostPath: root + "/v/config", Kind: VolumeSecret, Files: []string{"ca.crt", "conf.d/a.conf", "nova.conf"}},
		{MountPath: "/etc/nova/nova.conf", HostPath: root + "/v/config/nova.conf", Kind: VolumeSecret},
		{MountPath: "/etc/nova/conf.d", HostPath: root + "/v/config/conf.d", Kind: VolumeSecret, Files: []string{"a.conf"}},
		{MountPath: "/var/lib/nova/tmp", HostPath: root + "/v/scratch/tmp", Kind: VolumeEmptyDir},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("mounts = %+v\nwant %+v", got, want)
	}
	if _, err := os.Stat(root + "/v/scratch/tmp"); err != nil {
		t.Errorf("the emptyDir subPath was not created: %v", err)
	}
	wantConf := []string{root + "/v/config/conf.d/a.conf", root + "/v/config/nova.conf", root + "/v/config/nova.conf", root + "/v/config/conf.d/a.conf"}
	if files := got.ConfigFiles(); !reflect.DeepEqual(files, wantConf) {
		t.Errorf("ConfigFiles = %v, want %v", files, wantConf)
	}

	for _, bad := range []corev1.VolumeMount{
		{Name: "config", MountPath: "/x", SubPath: "../up"},
		{Name: "config", MountPath: "/x", SubPath: "/abs"},
		{Name: "nothere", MountPath: "/x"},
	} {
		if _, err := containerMounts(&corev1.Container{VolumeMounts: []corev1.VolumeMount{bad}}, vols); err == nil || strings.Contains(err.Error(), "s3cret") {
			t.Errorf("mount %+v: err = %v, want an error", bad, err)
		}
	}
}
