package podrunner

import (
	"context"
	"reflect"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// objectStore is an in-memory objectSource keyed by namespace/name. Tests
// may add objects while pods run, hence the lock.
type objectStore struct {
	mu         sync.Mutex
	secrets    map[string]*corev1.Secret
	configMaps map[string]*corev1.ConfigMap
}

func (s *objectStore) Secret(_ context.Context, namespace, name string) (*corev1.Secret, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.secrets[namespace+"/"+name]; ok {
		return o.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("secrets"), name)
}

func (s *objectStore) ConfigMap(_ context.Context, namespace, name string) (*corev1.ConfigMap, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if o, ok := s.configMaps[namespace+"/"+name]; ok {
		return o.DeepCopy(), nil
	}
	return nil, apierrors.NewNotFound(corev1.Resource("configmaps"), name)
}

func (s *objectStore) addSecret(namespace, name string, data map[string][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets[namespace+"/"+name] = &corev1.Secret{Data: data}
}

func testObjects() *objectStore {
	return &objectStore{
		secrets: map[string]*corev1.Secret{
			"ns/creds": {Data: map[string][]byte{"password": []byte("s3cret"), "user": []byte("nova")}},
		},
		configMaps: map[string]*corev1.ConfigMap{
			"ns/settings": {Data: map[string]string{"region": "RegionOne", "debug": "true"}, BinaryData: map[string][]byte{"blob": []byte("b")}},
		},
	}
}

// TestResolveEnv follows the kubelet's rules, and checks that values from
// Secrets are marked so they stay off command lines.
func TestResolveEnv(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", Namespace: "ns", UID: "u-1",
			Labels: map[string]string{"app": "nova"}, Annotations: map[string]string{"a": "b"},
		},
		Spec: corev1.PodSpec{NodeName: "node-1", ServiceAccountName: "sa"},
	}
	optional := true
	secretRef := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
	}
	cmRef := func(name, key string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: key}}
	}
	field := func(path string) *corev1.EnvVarSource {
		return &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}
	}
	tests := []struct {
		name    string
		c       corev1.Container
		want    []envVar
		wantErr string
	}{
		{
			name: "literal values and expansion",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "A", Value: "1"},
				{Name: "B", Value: "$(A)-$(UNDEFINED)-$$(A)"},
				{Name: "A", Value: "2"},
			}},
			want: []envVar{{name: "A", value: "2"}, {name: "B", value: "1-$(UNDEFINED)-$(A)"}},
		},
		{
			name: "secret and config map keys",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "PASSWORD", ValueFrom: secretRef("creds", "password")},
				{Name: "REGION", ValueFrom: cmRef("settings", "region")},
				{Name: "BLOB", ValueFrom: cmRef("settings", "blob")},
				{Name: "URL", Value: "rabbit://nova:$(PASSWORD)@host"},
			}},
			want: []envVar{
				{name: "PASSWORD", value: "s3cret", secret: true},
				{name: "REGION", value: "RegionOne"},
				{name: "BLOB", value: "b"},
				{name: "URL", value: "rabbit://nova:s3cret@host", secret: true},
			},
		},
		{
			name: "field refs",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "NODE", ValueFrom: field("spec.nodeName")},
				{Name: "HOST_IP", ValueFrom: field("status.hostIP")},
				{Name: "POD_IP", ValueFrom: field("status.podIP")},
				{Name: "NAME", ValueFrom: field("metadata.name")},
				{Name: "NS", ValueFrom: field("metadata.namespace")},
				{Name: "UID", ValueFrom: field("metadata.uid")},
				{Name: "SA", ValueFrom: field("spec.serviceAccountName")},
				{Name: "APP", ValueFrom: field("metadata.labels['app']")},
				{Name: "ANN", ValueFrom: field("metadata.annotations['a']")},
				{Name: "OS_DEFAULT__HOST", Value: "$(NODE)"},
			}},
			want: []envVar{
				{name: "NODE", value: "node-1"}, {name: "HOST_IP", value: "127.0.0.1"}, {name: "POD_IP", value: "127.0.0.1"},
				{name: "NAME", value: "p"}, {name: "NS", value: "ns"}, {name: "UID", value: "u-1"}, {name: "SA", value: "sa"},
				{name: "APP", value: "nova"}, {name: "ANN", value: "b"}, {name: "OS_DEFAULT__HOST", value: "node-1"},
			},
		},
		{
			name: "envFrom with prefix, env overrides",
			c: corev1.Container{
				EnvFrom: []corev1.EnvFromSource{
					{Prefix: "S_", SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}}},
					{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
					{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &optional}},
				},
				Env: []corev1.EnvVar{{Name: "S_USER", Value: "override"}},
			},
			want: []envVar{
				{name: "S_password", value: "s3cret", secret: true},
				{name: "S_user", value: "nova", secret: true},
				{name: "debug", value: "true"},
				{name: "region", value: "RegionOne"},
				{name: "S_USER", value: "override"},
			},
		},
		{
			name: "optional references to missing objects and keys",
			c: corev1.Container{Env: []corev1.EnvVar{
				{Name: "X", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Key: "k", Optional: &optional}}},
				{Name: "Y", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "nokey", Optional: &optional}}},
			}},
			want: []envVar{{name: "X", secret: true}, {name: "Y", secret: true}},
		},
		{
			name:    "missing secret",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: secretRef("absent", "k")}}},
			wantErr: `env X: reading Secret absent: secrets "absent" not found`,
		},
		{
			name:    "missing secret key",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: secretRef("creds", "token")}}},
			wantErr: `env X: key "token" not found in Secret creds`,
		},
		{
			name:    "missing config map key",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: cmRef("settings", "zone")}}},
			wantErr: `env X: key "zone" not found in ConfigMap settings`,
		},
		{
			name:    "unsupported field",
			c:       corev1.Container{Env: []corev1.EnvVar{{Name: "X", ValueFrom: field("spec.hostname")}}},
			wantErr: `env X: unsupported fieldRef "spec.hostname"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := resolveEnv(context.Background(), pod, &tt.c, testObjects())
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "s3cret") {
					t.Errorf("the error carries a secret value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("env = %+v\nwant  %+v", got, tt.want)
			}
		})
	}
}

// TestExpand pins the $(VAR) syntax the kubelet uses, escapes included.
func TestExpand(t *testing.T) {
	vars := map[string]string{"A": "x", "EMPTY": ""}
	lookup := func(n string) (string, bool) { v, ok := vars[n]; return v, ok }
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"$(A)", "x"},
		{"pre-$(A)-post", "pre-x-post"},
		{"$(EMPTY)|", "|"},
		{"$(B)", "$(B)"},
		{"$$(A)", "$(A)"},
		{"$$", "$"},
		{"$A", "$A"},
		{"$(A", "$(A"},
		{"end$", "end$"},
		{"$(A)$(A)", "xx"},
	}
	for _, tt := range tests {
		if got := expand(tt.in, lookup); got != tt.want {
			t.Errorf("expand(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestResourceValue(t *testing.T) {
	c := &corev1.Container{Resources: corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
	}}
	tests := []struct {
		res, divisor, want string
		wantErr            bool
	}{
		{res: "limits.cpu", want: "2"},
		{res: "limits.cpu", divisor: "1m", want: "1500"},
		{res: "limits.memory", divisor: "1Mi", want: "1024"},
		{res: "requests.cpu", divisor: "1m", want: "250"},
		{res: "requests.memory", want: "0"},
		{res: "limits.ephemeral-storage", divisor: "1Gi", want: "500"},
		{res: "limits.gpu", wantErr: true},
		{res: "cpu", wantErr: true},
	}
	for _, tt := range tests {
		ref := &corev1.ResourceFieldSelector{Resource: tt.res}
		if tt.divisor != "" {
			ref.Divisor = resource.MustParse(tt.divisor)
		}
		got, err := resourceValue(c, ref)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("resourceValue(%s, %s) = %q, %v; want %q (error %v)", tt.res, tt.divisor, got, err, tt.want, tt.wantErr)
		}
	}
}
