package nova

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/childwriter"
	"github.com/anvil/anvil/internal/controller/conditions"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/inputs"
	"github.com/anvil/anvil/internal/novaconfig"
)

func cond(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: novav1alpha1.ComputeConfigReadyCondition, Status: status, Reason: reason, Message: msg}
}

func manageCond(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: novav1alpha1.ManageConfigReadyCondition, Status: status, Reason: reason, Message: msg}
}

// TestFailingStepLeavesReadyNotTrue runs the Nova's real step list with
// every step before the failing one succeeding, then derives the status
// the way patchStatus does. A failed step must leave its condition False
// under the step's reason and Ready False, even though every condition was
// True for the generation before.
func TestFailingStepLeavesReadyNotTrue(t *testing.T) {
	r := &Reconciler{}
	missing := &inputs.MissingError{Field: "spec.serviceUser.secretRef", Namespace: "ns", Name: "pw", Key: "password"}
	tests := []struct {
		name           string
		step           int
		err            error
		wantCondition  string
		wantReason     string
		wantGeneration int64
	}{
		{name: "Keystone host refused", step: 0, err: flow.Invalid(novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.KeystoneEndpointNotAllowedReason, errors.New("spec.keystoneEndpoint: host evil.example:443 is not allowed")),
			wantCondition: novav1alpha1.ComputeConfigReadyCondition, wantReason: novav1alpha1.KeystoneEndpointNotAllowedReason, wantGeneration: 2},
		{name: "cluster unavailable", step: 1, err: flow.Wait(novav1alpha1.ComputeConfigReadyCondition, anvilmeta.TargetClusterUnavailableReason, time.Second, "gone"),
			wantCondition: novav1alpha1.ComputeConfigReadyCondition, wantReason: anvilmeta.TargetClusterUnavailableReason, wantGeneration: 2},
		{name: "missing input", step: 2, err: computeConfigError(missing),
			wantCondition: novav1alpha1.ComputeConfigReadyCondition, wantReason: novav1alpha1.WaitingForInputsReason, wantGeneration: 2},
		{name: "foreign Secret", step: 2, err: computeConfigError(&childwriter.NotOwnedError{Kind: "Secret", Namespace: "ns", Name: "x"}),
			wantCondition: novav1alpha1.ComputeConfigReadyCondition, wantReason: novav1alpha1.ComputeConfigErrorReason, wantGeneration: 2},
		{name: "apiserver error", step: 2, err: computeConfigError(errors.New("etcdserver: request timed out")),
			wantCondition: novav1alpha1.ComputeConfigReadyCondition, wantReason: anvilmeta.ReconcileErrorReason, wantGeneration: 1},
		{name: "missing database Secret", step: 3, err: manageConfigError(missing),
			wantCondition: novav1alpha1.ManageConfigReadyCondition, wantReason: novav1alpha1.WaitingForDatabaseSecretReason, wantGeneration: 2},
		{name: "manage config apiserver error", step: 3, err: manageConfigError(errors.New("connection refused")),
			wantCondition: novav1alpha1.ManageConfigReadyCondition, wantReason: anvilmeta.ReconcileErrorReason, wantGeneration: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			nova.Status.ObservedGeneration = 1
			for _, c := range flow.StepConditions(r.steps()) {
				nova.Status.Conditions = append(nova.Status.Conditions, metav1.Condition{Type: c, Status: metav1.ConditionTrue, Reason: "Was", ObservedGeneration: 1})
			}
			steps := r.steps()
			for i := range steps {
				steps[i].Run = func(context.Context, *pass) (flow.Outcome, error) {
					if i == tt.step {
						return flow.Continue, tt.err
					}
					conditionsOf(nova).Set(steps[i].Condition, metav1.ConditionTrue, "Done", "")
					return flow.Continue, nil
				}
			}
			_, err := flow.Run(context.Background(), conditionsOf(nova), &pass{nova: nova}, steps)
			conditions.Summarize(&nova.Status.CommonStatus, nova.Generation, err, r.summary())

			c := apimeta.FindStatusCondition(nova.Status.Conditions, tt.wantCondition)
			if c == nil || c.Status != metav1.ConditionFalse || c.Reason != tt.wantReason || c.ObservedGeneration != 2 {
				t.Fatalf("%s = %+v, want False %s at generation 2", tt.wantCondition, c, tt.wantReason)
			}
			ready := apimeta.FindStatusCondition(nova.Status.Conditions, anvilmeta.ReadyCondition)
			if ready.Status != metav1.ConditionFalse || ready.Reason != tt.wantReason || !strings.Contains(ready.Message, tt.wantCondition) {
				t.Errorf("Ready = %+v, want False %s naming %s", ready, tt.wantReason, tt.wantCondition)
			}
			if nova.Status.ObservedGeneration != tt.wantGeneration {
				t.Errorf("observedGeneration = %d, want %d", nova.Status.ObservedGeneration, tt.wantGeneration)
			}
		})
	}
}

func TestTransitionEvents(t *testing.T) {
	published := cond(metav1.ConditionTrue, novav1alpha1.ComputeConfigPublishedReason, "published x")
	failed := cond(metav1.ConditionFalse, novav1alpha1.ComputeConfigErrorReason, "section [DEFAULT] contains a control character")
	waiting := cond(metav1.ConditionFalse, novav1alpha1.WaitingForRemoteTransportURLReason, "w")
	managePublished := manageCond(metav1.ConditionTrue, novav1alpha1.ManageConfigPublishedReason, "published x-manage-config")
	manageFailed := manageCond(metav1.ConditionFalse, novav1alpha1.ManageConfigErrorReason, "spec: section [database] contains a control character")
	manageWaiting := manageCond(metav1.ConditionFalse, novav1alpha1.WaitingForDatabaseSecretReason, "w")
	manageNotRequired := manageCond(metav1.ConditionTrue, novav1alpha1.ManageConfigNotRequiredReason, "n")
	tests := []struct {
		name          string
		before, after []metav1.Condition
		want          []string
	}{
		{name: "first publish", after: []metav1.Condition{published}, want: []string{"Normal ComputeConfigPublished"}},
		{name: "steady", before: []metav1.Condition{published}, after: []metav1.Condition{published}},
		{name: "into an error", before: []metav1.Condition{published}, after: []metav1.Condition{failed}, want: []string{"Warning ComputeConfigError"}},
		{name: "same error again", before: []metav1.Condition{failed}, after: []metav1.Condition{failed}},
		{name: "recovered", before: []metav1.Condition{failed}, after: []metav1.Condition{published}, want: []string{"Normal ComputeConfigPublished"}},
		{name: "waiting records nothing", before: []metav1.Condition{published}, after: []metav1.Condition{waiting}},
		{name: "manage config published", before: []metav1.Condition{published}, after: []metav1.Condition{published, managePublished}, want: []string{"Normal ManageConfigPublished"}},
		{name: "manage config steady", before: []metav1.Condition{published, managePublished}, after: []metav1.Condition{published, managePublished}},
		{name: "manage config into an error", before: []metav1.Condition{published, managePublished}, after: []metav1.Condition{published, manageFailed}, want: []string{"Warning ManageConfigError"}},
		{name: "manage config waiting records nothing", before: []metav1.Condition{published, managePublished}, after: []metav1.Condition{published, manageWaiting}},
		{name: "not required records nothing", after: []metav1.Condition{published, manageNotRequired}, want: []string{"Normal ComputeConfigPublished"}},
		{name: "both at once, contract first", after: []metav1.Condition{published, managePublished}, want: []string{"Normal ComputeConfigPublished", "Normal ManageConfigPublished"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := transitionEvents(tt.before, tt.after)
			if len(got) != len(tt.want) {
				t.Fatalf("events = %+v, want %v", got, tt.want)
			}
			for i, e := range got {
				if e.Type+" "+e.Reason != tt.want[i] {
					t.Errorf("event %d = %s %s, want %s", i, e.Type, e.Reason, tt.want[i])
				}
			}
		})
	}
}

func TestNoVNCProxyBaseURL(t *testing.T) {
	nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-nova", Namespace: "openstack"}}
	if got, want := inputs.NoVNCProxyBaseURL(nova), "http://controlplane-nova-novncproxy.openstack.svc:6080/vnc_lite.html"; got != want {
		t.Errorf("service URL = %q, want %q", got, want)
	}
	nova.Spec.ConsoleProxy = &novav1alpha1.ConsoleProxySpec{Hostname: "console.example.com"}
	if got, want := inputs.NoVNCProxyBaseURL(nova), "https://console.example.com/vnc_lite.html"; got != want {
		t.Errorf("published URL = %q, want %q", got, want)
	}
}

func TestInputSecretNames(t *testing.T) {
	nova := &novav1alpha1.Nova{}
	nova.Spec.Messaging.SecretRef.Name = "bus"
	nova.Spec.ServiceUser.SecretRef.Name = "pw"
	nova.Spec.Metadata.SharedSecretRef.Name = "meta"
	if got := inputSecretNames(nova); len(got) != 3 {
		t.Errorf("plain = %v", got)
	}
	nova.Spec.Messaging.TLS = &novav1alpha1.MessagingTLSSpec{CABundleSecretRef: novav1alpha1.CABundleSecretRef{Name: "ca"}}
	nova.Spec.RemoteCompute = &novav1alpha1.RemoteComputeSpec{TransportURLSecretRef: novav1alpha1.TransportURLSecretRef{Name: "remote"}}
	got := inputSecretNames(nova)
	if len(got) != 5 || got[3] != "ca" || got[4] != "remote" {
		t.Errorf("with TLS and remote = %v", got)
	}
	nova.Spec.APIDatabase = &novav1alpha1.DatabaseSpec{SecretRef: novav1alpha1.DatabaseSecretRef{Name: "api-db"}}
	nova.Spec.Database = &novav1alpha1.DatabaseSpec{SecretRef: novav1alpha1.DatabaseSecretRef{Name: "cell-db"}}
	got = inputSecretNames(nova)
	if len(got) != 7 || got[5] != "api-db" || got[6] != "cell-db" {
		t.Errorf("with databases = %v", got)
	}
}

func TestBuildDatabase(t *testing.T) {
	tests := []struct {
		name     string
		port     int32
		wantPort int32
	}{
		{name: "declared port", port: 13306, wantPort: 13306},
		{name: "zero is the API default", port: 0, wantPort: 3306},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := &novav1alpha1.DatabaseSpec{Host: "db.example.com", Port: tt.port, Database: "nova_api", SecretRef: novav1alpha1.DatabaseSecretRef{Name: "s"}}
			got := buildDatabase(spec, "nova", "pw")
			want := novaconfig.Database{Host: "db.example.com", Port: tt.wantPort, Database: "nova_api", Username: "nova", Password: "pw"}
			if got != want {
				t.Errorf("buildDatabase = %+v, want %+v", got, want)
			}
		})
	}
}

func TestBuildManageConfigSecret(t *testing.T) {
	nova := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: "controlplane-nova", Namespace: "openstack"}}
	s := buildManageConfigSecret(nova, []byte("conf"))
	if s.Name != "controlplane-nova-manage-config" || s.Namespace != "openstack" || s.Type != corev1.SecretTypeOpaque {
		t.Errorf("Secret = %s/%s of type %s", s.Namespace, s.Name, s.Type)
	}
	if s.Labels[novav1alpha1.ComponentLabel] != "manage-config" || len(s.Labels) != 1 {
		t.Errorf("labels = %v", s.Labels)
	}
	if len(s.Data) != 1 || string(s.Data["nova-manage.conf"]) != "conf" {
		t.Errorf("data keys = %d", len(s.Data))
	}
}
