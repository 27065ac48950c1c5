package podrunner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
)

// TestEntrypointCommand checks that a container of the mapped image runs the
// local binary with its own arguments, expanded and translated, and that a
// pod with a mounted token gets a kubeconfig naming the token's file.
func TestEntrypointCommand(t *testing.T) {
	e := Entrypoint{Repository: "devstack.invalid/op", Binary: "/bin/op", Server: "https://127.0.0.1:6443", CAData: []byte("ca"), LogCopy: "/tmp/op.log"}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op-1", Namespace: "anvil-system"}}
	saMount := Mount{MountPath: ServiceAccountMountPath, HostPath: "/w/vol/sa"}
	tlsMount := Mount{MountPath: "/etc/tls", HostPath: "/w/vol/tls"}
	tests := []struct {
		name       string
		spec       corev1.Container
		mounts     Mounts
		wantArgs   []string
		kubeconfig bool
		wantErr    string
	}{
		{name: "args expanded and translated, with a token",
			spec:     corev1.Container{Name: "manager", Image: "devstack.invalid/op@sha256:0", Args: []string{"--metrics=$(POD_IP):8443", "--cert-dir=/etc/tls"}},
			mounts:   Mounts{tlsMount, saMount},
			wantArgs: []string{"--metrics=127.0.0.1:8443", "--cert-dir=/w/vol/tls"}, kubeconfig: true},
		{name: "no token mounted, no kubeconfig",
			spec:     corev1.Container{Name: "manager", Image: "devstack.invalid/op:v1", Args: []string{"--x"}},
			wantArgs: []string{"--x"}},
		{name: "a command replacing the entrypoint is refused",
			spec:    corev1.Container{Name: "manager", Image: "devstack.invalid/op", Command: []string{"/bin/sh"}},
			wantErr: "replaces the entrypoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !EntrypointMapping(e).Match(&tt.spec) {
				t.Fatal("the mapping does not match its repository")
			}
			work := t.TempDir()
			cmd, err := e.command(Container{Pod: pod, Spec: &tt.spec, Mounts: tt.mounts, WorkDir: work, Env: map[string]string{"POD_IP": "127.0.0.1"}})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cmd.Path != e.Binary || strings.Join(cmd.Args, " ") != strings.Join(tt.wantArgs, " ") || cmd.LogCopy != e.LogCopy {
				t.Errorf("command = %s %v (log %q)", cmd.Path, cmd.Args, cmd.LogCopy)
			}
			path := filepath.Join(work, "kubeconfig")
			if !tt.kubeconfig {
				if len(cmd.Files) != 0 || cmd.Env["KUBECONFIG"] != "" {
					// Names only: a file here would hold a token.
					t.Errorf("a kubeconfig without a token: %d files, KUBECONFIG=%q", len(cmd.Files), cmd.Env["KUBECONFIG"])
				}
				return
			}
			if cmd.Env["KUBECONFIG"] != path {
				t.Fatalf("KUBECONFIG = %q", cmd.Env["KUBECONFIG"])
			}
			cfg, err := clientcmd.Load(cmd.Files[path])
			if err != nil {
				t.Fatal(err)
			}
			ctx := cfg.Contexts[cfg.CurrentContext]
			auth, cluster := cfg.AuthInfos[ctx.AuthInfo], cfg.Clusters[ctx.Cluster]
			if auth.TokenFile != "/w/vol/sa/token" || auth.Token != "" || cluster.Server != e.Server || string(cluster.CertificateAuthorityData) != "ca" || ctx.Namespace != "anvil-system" {
				t.Errorf("kubeconfig = %+v %+v %+v", auth, cluster, ctx)
			}
		})
	}
}

// tokenObjects is an objectSource that also issues tokens.
type tokenObjects struct{ *objectStore }

func (tokenObjects) ServiceAccountToken(_ context.Context, pod *corev1.Pod, p *corev1.ServiceAccountTokenProjection) (string, error) {
	return "token-of-" + pod.Spec.ServiceAccountName + "-" + p.Audience, nil
}

// TestProjectedServiceAccountToken checks that a source able to issue
// tokens gets the token written, private to the owner.
func TestProjectedServiceAccountToken(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"},
		Spec: corev1.PodSpec{ServiceAccountName: "sa", Volumes: []corev1.Volume{{Name: "api", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", Audience: "api"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}, Items: []corev1.KeyToPath{{Key: "region", Path: "region"}}}},
			}}}}}},
	}
	root := t.TempDir()
	vols, err := materialiseVolumes(context.Background(), pod, tokenObjects{testObjects()}, filepath.Join(root, "pod"), filepath.Join(root, "host"), filepath.Join(root, "claims"))
	if err != nil {
		t.Fatal(err)
	}
	token := filepath.Join(vols["api"].dir, "token")
	raw, err := os.ReadFile(token)
	if err != nil || string(raw) != "token-of-sa-api" {
		t.Fatalf("token = %q, %v", raw, err)
	}
	if fi, err := os.Stat(token); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token mode = %v, %v", fi.Mode(), err)
	}
}
