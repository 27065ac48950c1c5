package novacompute

import (
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func TestDiscoverJobName(t *testing.T) {
	long := strings.Repeat("a", 39) + "-region-one-nova"
	tests := []struct {
		name      string
		nova      string
		want      string // exact name, when the name is kept
		shortened bool
	}{
		{name: "a short name is kept", nova: "cp-nova", want: "cp-nova-discover-hosts"},
		{name: "a name reaching exactly 63 characters is kept",
			nova: strings.Repeat("n", 48), want: strings.Repeat("n", 48) + "-discover-hosts"},
		{name: "a name one past 63 characters is shortened", nova: strings.Repeat("n", 49), shortened: true},
		{name: "a long name is shortened", nova: long, shortened: true},
		{name: "a very long name is shortened", nova: strings.Repeat("x", 200), shortened: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := DiscoverJobName(tt.nova)
			if !tt.shortened {
				if got != tt.want {
					t.Errorf("DiscoverJobName(%q) = %q, want %q", tt.nova, got, tt.want)
				}
				return
			}
			if len(got) > 63 {
				t.Errorf("DiscoverJobName(%q) = %q has %d characters, want at most 63", tt.nova, got, len(got))
			}
			if !strings.HasSuffix(got, "-discover-hosts") {
				t.Errorf("DiscoverJobName(%q) = %q, want the suffix -discover-hosts", tt.nova, got)
			}
			if !strings.HasPrefix(got, tt.nova[:20]) {
				t.Errorf("DiscoverJobName(%q) = %q, want it to start with the Nova's name", tt.nova, got)
			}
			if errs := validation.IsDNS1123Label(got); len(errs) > 0 {
				t.Errorf("DiscoverJobName(%q) = %q is no DNS label: %v", tt.nova, got, errs)
			}
			if again := DiscoverJobName(tt.nova); again != got {
				t.Errorf("DiscoverJobName(%q) = %q, then %q, want it deterministic", tt.nova, got, again)
			}
		})
	}
}

func TestDiscoverJobNameDistinct(t *testing.T) {
	prefix := strings.Repeat("p", 60)
	tests := []struct {
		name string
		a, b string
	}{
		{name: "long names that differ only at the end", a: prefix + "-one", b: prefix + "-two"},
		{name: "long names that differ only in length", a: prefix, b: prefix + "p"},
		{name: "a kept and a shortened name", a: strings.Repeat("q", 48), b: strings.Repeat("q", 49)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if a, b := DiscoverJobName(tt.a), DiscoverJobName(tt.b); a == b {
				t.Errorf("DiscoverJobName(%q) = DiscoverJobName(%q) = %q, want distinct names", tt.a, tt.b, a)
			}
		})
	}
}

// discNova is the Nova cp-nova in namespace openstack with an image.
func discNova(name string, img func(*novav1alpha1.Nova)) *novav1alpha1.Nova {
	n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "openstack"}}
	n.Spec.Image.Repository = "ghcr.io/c5c3/nova"
	n.Spec.Image.Tag = "2026.1"
	n.Spec.Image.PullPolicy = "IfNotPresent"
	if img != nil {
		img(n)
	}
	return n
}

func TestBuildDiscoverJobImage(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	tests := []struct {
		name       string
		nova       *novav1alpha1.Nova
		wantImage  string
		wantPolicy corev1.PullPolicy
	}{
		{name: "repository and tag", nova: discNova("cp-nova", nil),
			wantImage: "ghcr.io/c5c3/nova:2026.1", wantPolicy: corev1.PullIfNotPresent},
		{name: "repository and digest", nova: discNova("cp-nova", func(n *novav1alpha1.Nova) {
			n.Spec.Image.Tag, n.Spec.Image.Digest, n.Spec.Image.PullPolicy = "", digest, "Always"
		}), wantImage: "ghcr.io/c5c3/nova@" + digest, wantPolicy: corev1.PullAlways},
		{name: "a digest wins over a tag", nova: discNova("cp-nova", func(n *novav1alpha1.Nova) {
			n.Spec.Image.Digest = digest
		}), wantImage: "ghcr.io/c5c3/nova@" + digest, wantPolicy: corev1.PullIfNotPresent},
		{name: "no pull policy leaves the kubelet's default", nova: discNova("cp-nova", func(n *novav1alpha1.Nova) {
			n.Spec.Image.PullPolicy = ""
		}), wantImage: "ghcr.io/c5c3/nova:2026.1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := BuildDiscoverJob(tt.nova, "cp-nova-manage-config")
			if n := len(job.Spec.Template.Spec.Containers); n != 1 {
				t.Fatalf("%d containers, want 1", n)
			}
			c := job.Spec.Template.Spec.Containers[0]
			if c.Image != tt.wantImage || c.ImagePullPolicy != tt.wantPolicy {
				t.Errorf("image = %q (%q), want %q (%q)", c.Image, c.ImagePullPolicy, tt.wantImage, tt.wantPolicy)
			}
		})
	}
}

func TestBuildDiscoverJob(t *testing.T) {
	job := BuildDiscoverJob(discNova("cp-nova", nil), "cp-nova-manage-config")
	pod := job.Spec.Template.Spec
	tests := []struct {
		name  string
		check func(t *testing.T)
	}{
		{name: "no service account token", check: func(t *testing.T) {
			if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
				t.Error("the Job's pod mounts a service account token, which nova-manage never uses")
			}
		}},
		{name: "name and namespace", check: func(t *testing.T) {
			if job.Name != "cp-nova-discover-hosts" || job.Namespace != "openstack" {
				t.Errorf("Job = %s/%s, want openstack/cp-nova-discover-hosts", job.Namespace, job.Name)
			}
		}},
		{name: "labels", check: func(t *testing.T) {
			want := map[string]string{"app.kubernetes.io/name": "nova", "app.kubernetes.io/instance": "cp-nova", "app.kubernetes.io/component": "discover-hosts"}
			for _, got := range []map[string]string{job.Labels, job.Spec.Template.Labels} {
				if len(got) != len(want) {
					t.Errorf("labels = %v, want %v", got, want)
				}
				for k, v := range want {
					if got[k] != v {
						t.Errorf("label %s = %q, want %q", k, got[k], v)
					}
				}
			}
		}},
		{name: "no selector of its own", check: func(t *testing.T) {
			if job.Spec.Selector != nil || job.Spec.ManualSelector != nil {
				t.Errorf("selector = %v, manualSelector = %v, want both left to the apiserver", job.Spec.Selector, job.Spec.ManualSelector)
			}
		}},
		{name: "command", check: func(t *testing.T) {
			want := []string{"nova-manage", "--config-dir", "/etc/nova/nova.conf.d", "cell_v2", "discover_hosts", "--verbose"}
			if got := pod.Containers[0].Command; !slices.Equal(got, want) {
				t.Errorf("command = %q, want %q", got, want)
			}
		}},
		{name: "one attempt", check: func(t *testing.T) {
			if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 {
				t.Errorf("backoffLimit = %v, want 0", job.Spec.BackoffLimit)
			}
			if pod.RestartPolicy != corev1.RestartPolicyNever {
				t.Errorf("restartPolicy = %s, want Never", pod.RestartPolicy)
			}
		}},
		{name: "deadline and TTL", check: func(t *testing.T) {
			if job.Spec.ActiveDeadlineSeconds == nil || *job.Spec.ActiveDeadlineSeconds != 300 {
				t.Errorf("activeDeadlineSeconds = %v, want 300", job.Spec.ActiveDeadlineSeconds)
			}
			if job.Spec.TTLSecondsAfterFinished == nil || *job.Spec.TTLSecondsAfterFinished != 300 {
				t.Errorf("ttlSecondsAfterFinished = %v, want 300", job.Spec.TTLSecondsAfterFinished)
			}
			if discoveryKeep >= discoveryTTLSeconds {
				t.Errorf("a finished Job is kept %d s but collected after %d s, want it kept for less than its TTL", discoveryKeep, discoveryTTLSeconds)
			}
		}},
		{name: "fsGroup and non-root user", check: func(t *testing.T) {
			if pod.SecurityContext == nil || pod.SecurityContext.FSGroup == nil || *pod.SecurityContext.FSGroup != 42424 {
				t.Errorf("pod security context = %+v, want fsGroup 42424", pod.SecurityContext)
			}
			sc := pod.Containers[0].SecurityContext
			if sc == nil || sc.RunAsUser == nil || *sc.RunAsUser != 42424 || sc.RunAsNonRoot == nil || !*sc.RunAsNonRoot ||
				sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
				t.Errorf("container security context = %+v, want uid 42424, non-root, no privilege escalation", sc)
			}
			if sc != nil && (sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"})) {
				t.Errorf("capabilities = %+v, want drop ALL", sc.Capabilities)
			}
		}},
		{name: "the manage config Secret is mounted read-only", check: func(t *testing.T) {
			if len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != "cp-nova-manage-config" {
				t.Fatalf("volumes = %+v, want one Secret volume cp-nova-manage-config", pod.Volumes)
			}
			mounts := pod.Containers[0].VolumeMounts
			if len(mounts) != 1 || mounts[0].Name != pod.Volumes[0].Name || mounts[0].MountPath != "/etc/nova/nova.conf.d" || !mounts[0].ReadOnly {
				t.Errorf("mounts = %+v, want %s read-only at /etc/nova/nova.conf.d", mounts, pod.Volumes[0].Name)
			}
		}},
		{name: "no env carries a value", check: func(t *testing.T) {
			if env := pod.Containers[0].Env; len(env) != 0 {
				t.Errorf("env = %+v, want none: the configuration comes from the Secret", env)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, tt.check)
	}
}

// TestBuildDiscoverJobLabels checks that the Job's name and labels are
// valid for every Nova name the Nova CRD admits (at most 41 characters).
func TestBuildDiscoverJobLabels(t *testing.T) {
	tests := []struct {
		name string
		nova string
	}{
		{name: "a short name", nova: "cp-nova"},
		{name: "the longest name a Nova may have", nova: strings.Repeat("n", 41)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			job := BuildDiscoverJob(discNova(tt.nova, nil), "m")
			if errs := validation.IsDNS1123Label(job.Name); len(errs) > 0 {
				t.Errorf("Job name %q is invalid: %v", job.Name, errs)
			}
			for _, labels := range []map[string]string{job.Labels, job.Spec.Template.Labels} {
				for k, v := range labels {
					if errs := validation.IsValidLabelValue(v); len(errs) > 0 {
						t.Errorf("label %s = %q is invalid: %v", k, v, errs)
					}
				}
			}
		})
	}
}

// TestJobPredates: a finished Job is replaced at once only when it started
// before the newest unmapped host's nova-compute, which it cannot have seen.
func TestJobPredates(t *testing.T) {
	t0 := time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)
	job := func(start *time.Time) *batchv1.Job {
		j := &batchv1.Job{}
		if start != nil {
			j.Status.StartTime = &metav1.Time{Time: *start}
		}
		return j
	}
	before, same, after := t0.Add(-5*time.Second), t0, t0.Add(5*time.Second)
	for name, tc := range map[string]struct {
		job    *batchv1.Job
		newest time.Time
		want   bool
	}{
		"started before the compute":    {job: job(&before), newest: t0, want: true},
		"started in the same second":    {job: job(&same), newest: t0},
		"started after the compute":     {job: job(&after), newest: t0},
		"no start time reported":        {job: job(nil), newest: t0},
		"no compute start known":        {job: job(&before)},
		"no start time, no start known": {job: job(nil)},
	} {
		t.Run(name, func(t *testing.T) {
			if got := JobPredates(tc.job, tc.newest); got != tc.want {
				t.Errorf("JobPredates = %v, want %v", got, tc.want)
			}
		})
	}
}
