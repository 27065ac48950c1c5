package nova

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

func cond(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: novav1alpha1.ComputeConfigReadyCondition, Status: status, Reason: reason, Message: msg}
}

func manageCond(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: novav1alpha1.ManageConfigReadyCondition, Status: status, Reason: reason, Message: msg}
}

func TestReadyCondition(t *testing.T) {
	published := cond(metav1.ConditionTrue, novav1alpha1.ComputeConfigPublishedReason, "")
	notRequired := manageCond(metav1.ConditionTrue, novav1alpha1.ManageConfigNotRequiredReason, "")
	tests := []struct {
		name       string
		conds      []metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
	}{
		{name: "nothing reported yet", wantStatus: metav1.ConditionUnknown, wantReason: anvilmeta.ReconcilingReason},
		{name: "published, manage config not yet reported", conds: []metav1.Condition{published}, wantStatus: metav1.ConditionUnknown, wantReason: anvilmeta.ReconcilingReason},
		{name: "published, no databases", conds: []metav1.Condition{published, notRequired}, wantStatus: metav1.ConditionTrue, wantReason: ReadyReason},
		{name: "both published", conds: []metav1.Condition{published, manageCond(metav1.ConditionTrue, novav1alpha1.ManageConfigPublishedReason, "")}, wantStatus: metav1.ConditionTrue, wantReason: ReadyReason},
		{name: "waiting for a database Secret", conds: []metav1.Condition{published, manageCond(metav1.ConditionFalse, novav1alpha1.WaitingForDatabaseSecretReason, "m")}, wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.WaitingForDatabaseSecretReason},
		{name: "manage config error", conds: []metav1.Condition{published, manageCond(metav1.ConditionFalse, novav1alpha1.ManageConfigErrorReason, "m")}, wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.ManageConfigErrorReason},
		{name: "the contract comes first", conds: []metav1.Condition{cond(metav1.ConditionFalse, novav1alpha1.WaitingForInputsReason, "m"), manageCond(metav1.ConditionFalse, novav1alpha1.WaitingForDatabaseSecretReason, "m")}, wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.WaitingForInputsReason},
		{name: "waiting for the remote URL", conds: []metav1.Condition{cond(metav1.ConditionFalse, novav1alpha1.WaitingForRemoteTransportURLReason, "m"), notRequired}, wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.WaitingForRemoteTransportURLReason},
		{name: "error", conds: []metav1.Condition{cond(metav1.ConditionFalse, novav1alpha1.ComputeConfigErrorReason, "m")}, wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.ComputeConfigErrorReason},
		{name: "cluster unavailable", conds: []metav1.Condition{cond(metav1.ConditionFalse, anvilmeta.TargetClusterUnavailableReason, "m")}, wantStatus: metav1.ConditionFalse, wantReason: anvilmeta.TargetClusterUnavailableReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readyCondition(tt.conds, 3)
			if got.Status != tt.wantStatus || got.Reason != tt.wantReason || got.Type != anvilmeta.ReadyCondition || got.ObservedGeneration != 3 {
				t.Errorf("Ready = %+v", got)
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
	if got, want := noVNCProxyBaseURL(nova), "http://controlplane-nova-novncproxy.openstack.svc:6080/vnc_lite.html"; got != want {
		t.Errorf("service URL = %q, want %q", got, want)
	}
	nova.Spec.ConsoleProxy.Hostname = "console.example.com"
	if got, want := noVNCProxyBaseURL(nova), "https://console.example.com/vnc_lite.html"; got != want {
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
