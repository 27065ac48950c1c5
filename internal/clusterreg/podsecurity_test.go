package clusterreg

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func TestPodSecurityProblem(t *testing.T) {
	baseline := "kubectl label --overwrite namespace team-x pod-security.kubernetes.io/enforce=baseline pod-security.kubernetes.io/warn=restricted pod-security.kubernetes.io/audit=restricted"
	privileged := "kubectl label --overwrite namespace team-x pod-security.kubernetes.io/enforce=privileged"
	enforce := func(level string) map[string]string {
		return map[string]string{PodSecurityEnforceLabel: level, "kubernetes.io/metadata.name": "team-x"}
	}
	tests := []struct {
		name       string
		exists     bool
		labels     map[string]string
		privileged bool
		// want are fragments of the problem; none means no problem.
		want []string
	}{
		{name: "baseline", exists: true, labels: enforce("baseline")},
		{name: "restricted", exists: true, labels: enforce("restricted")},
		{name: "privileged where the chart grants DaemonSets", exists: true, labels: enforce("privileged"), privileged: true},
		{
			name: "no labels", exists: true,
			want: []string{"namespace team-x has no pod-security.kubernetes.io/enforce label", "privileged unless", baseline},
		},
		{
			// warn and audit refuse nothing, so they do not stand in for enforce.
			name: "warn and audit only", exists: true,
			labels: map[string]string{PodSecurityWarnLabel: "restricted", PodSecurityAuditLabel: "restricted"},
			want:   []string{"namespace team-x has no pod-security.kubernetes.io/enforce label", baseline},
		},
		{
			name: "privileged where the chart does not grant DaemonSets", exists: true, labels: enforce("privileged"),
			want: []string{"namespace team-x has pod-security.kubernetes.io/enforce=privileged", "does not treat it as privileged", baseline},
		},
		{
			name: "not a level", exists: true, labels: enforce("Baseline"),
			want: []string{`namespace team-x has pod-security.kubernetes.io/enforce="Baseline"`, "neither baseline nor restricted", baseline},
		},
		{
			name: "unlabelled where the chart grants DaemonSets", exists: true, privileged: true,
			want: []string{"namespace team-x is one of the access chart's privileged namespaces", "has no pod-security.kubernetes.io/enforce label", privileged},
		},
		{
			name: "baseline where the chart grants DaemonSets", exists: true, labels: enforce("baseline"), privileged: true,
			want: []string{`has pod-security.kubernetes.io/enforce="baseline"`, privileged},
		},
		{
			name: "missing",
			want: []string{"namespace team-x does not exist", "createNamespaces=true", "kubectl create namespace team-x && " + baseline},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podSecurityProblem(namespaceState{name: "team-x", exists: tt.exists, labels: tt.labels, privileged: tt.privileged})
			if len(tt.want) == 0 {
				if got != "" {
					t.Errorf("problem %q, want none", got)
				}
				return
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("problem %q does not contain %q", got, w)
				}
			}
		})
	}
}

// podSecurityCluster is a fake compute cluster holding namespaces, on which
// the chart's ServiceAccount may create DaemonSets in daemonSets only.
func podSecurityCluster(namespaces []*corev1.Namespace, daemonSets ...string) *fake.Clientset {
	var objs []runtime.Object
	for _, ns := range namespaces {
		objs = append(objs, ns)
	}
	cs := fake.NewClientset(objs...)
	cs.PrependReactor("create", "localsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		review := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.LocalSubjectAccessReview)
		attrs := review.Spec.ResourceAttributes
		review.Status.Allowed = review.Spec.User == "system:serviceaccount:c5c3-access:target-cluster-access" &&
			attrs.Group == "apps" && attrs.Resource == "daemonsets" && attrs.Verb == "create" &&
			attrs.Namespace == review.Namespace && slices.Contains(daemonSets, attrs.Namespace)
		return true, review, nil
	})
	return cs
}

// labelledNamespace is a Namespace with the enforce label at level, or
// without it when level is "".
func labelledNamespace(name, level string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if level != "" {
		ns.Labels = map[string]string{PodSecurityEnforceLabel: level}
	}
	return ns
}

func TestCheckPodSecurity(t *testing.T) {
	namespaces := []*corev1.Namespace{
		labelledNamespace("openstack", "privileged"),
		labelledNamespace("ovn", "baseline"),
		labelledNamespace("plain", ""),
		labelledNamespace("wide-open", "privileged"),
	}
	tests := []struct {
		name       string
		namespaces string
		allow      bool
		wantErr    []string
		wantOut    []string
		notInErr   []string
	}{
		{name: "cluster-wide names no namespace", namespaces: ""},
		{name: "labelled as the chart labels them", namespaces: "openstack,ovn"},
		{
			name: "every problem at once", namespaces: "openstack,ovn,plain,wide-open,absent",
			wantErr: []string{
				"refusing to register", "namespace plain has no", "namespace wide-open has pod-security.kubernetes.io/enforce=privileged",
				"namespace absent does not exist", "kubectl label --overwrite namespace plain ",
			},
			notInErr: []string{"namespace openstack", "namespace ovn", "--allow-unlabelled-namespaces"},
		},
		{
			name: "allowed with a warning", namespaces: "openstack,plain", allow: true,
			wantOut: []string{"warning: namespace plain has no", "kubectl label --overwrite namespace plain ", "--allow-unlabelled-namespaces"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cs := podSecurityCluster(namespaces, "openstack")
			opts := Options{AccessNamespace: "c5c3-access", ServiceAccount: "target-cluster-access", AllowUnlabelledNamespaces: tt.allow}
			var out bytes.Buffer
			err := checkPodSecurity(context.Background(), cs, opts, tt.namespaces, &out)
			if len(tt.wantErr) == 0 && err != nil {
				t.Fatalf("checkPodSecurity: %v", err)
			}
			if len(tt.wantErr) > 0 {
				if !errors.Is(err, ErrUnlabelledNamespace) {
					t.Fatalf("error %v does not wrap ErrUnlabelledNamespace", err)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q does not contain %q", err, w)
					}
				}
				for _, w := range tt.notInErr {
					if strings.Contains(err.Error(), w) {
						t.Errorf("error %q contains %q", err, w)
					}
				}
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output %q does not contain %q", out.String(), w)
				}
			}
			if len(tt.wantOut) == 0 && out.Len() > 0 {
				t.Errorf("unexpected output %q", out.String())
			}
		})
	}
}

// A registrant who may not read the namespaces gets an error that says
// what is missing, and the override registers with a warning instead.
func TestCheckPodSecurityUnreadable(t *testing.T) {
	cs := podSecurityCluster(nil)
	cs.PrependReactor("get", "namespaces", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("namespaces"), "team-x", errors.New("no"))
	})
	opts := Options{AccessNamespace: "c5c3-access", ServiceAccount: "target-cluster-access"}
	err := checkPodSecurity(context.Background(), cs, opts, "team-x", nil)
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "namespace team-x") ||
		!strings.Contains(err.Error(), "--allow-unlabelled-namespaces") {
		t.Errorf("error %v: want a Forbidden naming the namespace and the override", err)
	}
	opts.AllowUnlabelledNamespaces = true
	var out bytes.Buffer
	if err := checkPodSecurity(context.Background(), cs, opts, "team-x", &out); err != nil {
		t.Fatalf("with the override: %v", err)
	}
	if !strings.Contains(out.String(), "warning: reading namespace team-x") {
		t.Errorf("output %q does not warn about the unread namespace", out.String())
	}
}
