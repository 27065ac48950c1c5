package controlplane

import (
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// keptNovaFields are the NovaSpec fields a ControlPlane never sets, which
// PredictNova keeps from the live Nova; every other field comes from the
// ControlPlane's apply.
var keptNovaFields = map[string]bool{"logging": true, "targetClusterRef": true, "replicas": true}

// A field added to NovaSpec must be placed on one side of the split: a
// field BuildNovaSpec sets but PredictNova kept, or the reverse, would
// make the mirrors written ahead differ from the Nova the apply leaves.
func TestPredictNovaNamesEveryField(t *testing.T) {
	setByControlPlane := map[string]bool{
		"openStackRelease": true, "image": true, "messaging": true, "keystoneEndpoint": true,
		"keystonePublicEndpoint": true, "serviceUser": true, "region": true, "endpoints": true,
		"metadata": true, "consoleProxy": true, "remoteCompute": true, "apiDatabase": true, "database": true,
	}
	typ := reflect.TypeFor[novav1alpha1.NovaSpec]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		if setByControlPlane[name] == keptNovaFields[name] {
			t.Errorf("NovaSpec.%s is on neither or both sides of PredictNova's split", name)
		}
	}
	// A ControlPlane that declares everything still leaves the kept
	// fields alone, but for replicas, which it sets only when declared.
	cp := applyAheadControlPlane()
	cp.Spec.Services.Nova.Replicas = nil
	spec, err := BuildNovaSpec(cp)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Logging != (novav1alpha1.LoggingSpec{}) || spec.TargetClusterRef != nil || spec.Replicas != nil {
		t.Errorf("BuildNovaSpec set a field PredictNova keeps: %+v %+v %v", spec.Logging, spec.TargetClusterRef, spec.Replicas)
	}
}

func TestPredictNova(t *testing.T) {
	cp := applyAheadControlPlane()
	desired, err := BuildNovaSpec(cp)
	if err != nil {
		t.Fatal(err)
	}
	live := liveNova(cp, desired)
	live.Spec.Logging.Debug = true
	live.Spec.TargetClusterRef = &anvilmeta.TargetClusterRef{Name: "mgmt"}
	live.Spec.Replicas = ptr.To[int32](2)

	unchanged := PredictNova(live, desired)
	if unchanged.Generation != live.Generation || !equality.Semantic.DeepEqual(unchanged.Spec, live.Spec) {
		t.Errorf("an apply of the live spec predicts a change: generation %d, spec %+v", unchanged.Generation, unchanged.Spec)
	}

	moved := desired.DeepCopy()
	moved.ConsoleProxy = &novav1alpha1.ConsoleProxySpec{Enabled: true, Hostname: "console.example.com"}
	moved.Replicas = ptr.To[int32](3)
	got := PredictNova(live, *moved)
	if got.Generation != live.Generation+1 {
		t.Errorf("generation %d, want %d", got.Generation, live.Generation+1)
	}
	if got.Spec.ConsoleProxy == nil || got.Spec.ConsoleProxy.Hostname != "console.example.com" || *got.Spec.Replicas != 3 {
		t.Errorf("the ControlPlane's fields were not taken: %+v replicas %v", got.Spec.ConsoleProxy, got.Spec.Replicas)
	}
	if !got.Spec.Logging.Debug || got.Spec.TargetClusterRef == nil || got.Spec.TargetClusterRef.Name != "mgmt" {
		t.Errorf("the fields the ControlPlane never sets were not kept: %+v %+v", got.Spec.Logging, got.Spec.TargetClusterRef)
	}
	if live.Spec.ConsoleProxy != nil || *live.Spec.Replicas != 2 {
		t.Error("PredictNova changed the live Nova")
	}

	// The way back: a field the ControlPlane stops setting is gone, and an
	// unset count keeps the one the cluster defaulted.
	live.Spec = *got.Spec.DeepCopy()
	unset := desired.DeepCopy()
	unset.Replicas = nil
	back := PredictNova(live, *unset)
	if back.Spec.ConsoleProxy != nil || *back.Spec.Replicas != 3 {
		t.Errorf("after the way back: console proxy %+v, replicas %v", back.Spec.ConsoleProxy, back.Spec.Replicas)
	}
}

func TestDecideApplyAhead(t *testing.T) {
	cp := applyAheadControlPlane()
	desired, err := BuildNovaSpec(cp)
	if err != nil {
		t.Fatal(err)
	}
	change := func(mutate func(*novav1alpha1.NovaSpec)) novav1alpha1.NovaSpec {
		s := desired.DeepCopy()
		mutate(s)
		return *s
	}
	console := change(func(s *novav1alpha1.NovaSpec) {
		s.ConsoleProxy = &novav1alpha1.ConsoleProxySpec{Enabled: true, Hostname: "console.example.com"}
	})
	tests := []struct {
		name    string
		seen    int64 // NovaReady's observed generation; 0 for none
		refused int64 // the generation last refused after an ahead write
		live    func() *novav1alpha1.Nova
		spec    novav1alpha1.NovaSpec
		expect  bool
	}{
		{name: "a new spec for a published Nova", seen: 6, spec: console, expect: true},
		{name: "NovaReady never set", spec: console, expect: true},
		{name: "NovaReady saw this generation", seen: 7, spec: console},
		{name: "this generation was refused after an ahead write", seen: 6, refused: 7, spec: console},
		{name: "an older generation was refused", seen: 6, refused: 5, spec: console, expect: true},
		{name: "no Nova yet", seen: 6, live: func() *novav1alpha1.Nova { return nil }, spec: console},
		{name: "a Nova the ControlPlane does not control", seen: 6, spec: console, live: func() *novav1alpha1.Nova {
			n := liveNova(cp, desired)
			n.OwnerReferences = nil
			return n
		}},
		{name: "a Nova that never published", seen: 6, spec: console, live: func() *novav1alpha1.Nova {
			n := liveNova(cp, desired)
			n.Status.ComputeConfigSecretRef = nil
			return n
		}},
		{name: "nothing to apply", seen: 6, spec: desired},
		{name: "the Keystone endpoint moves", seen: 6, spec: change(func(s *novav1alpha1.NovaSpec) {
			s.KeystoneEndpoint = "http://keystone-2.openstack.svc:5000/v3"
		})},
		{name: "the public Keystone moves", seen: 6, spec: change(func(s *novav1alpha1.NovaSpec) {
			s.KeystonePublicEndpoint = "https://keystone-2.example.com/v3"
		})},
		{name: "the remote computes' Keystone moves", seen: 6, spec: change(func(s *novav1alpha1.NovaSpec) {
			s.RemoteCompute.KeystoneEndpoint = "https://keystone-2.example.com/v3"
		})},
		{name: "the Nova's rules refuse it", seen: 6, spec: change(func(s *novav1alpha1.NovaSpec) {
			s.Messaging.TLS = nil
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := cp.DeepCopy()
			c.Generation = 7
			if tt.seen > 0 {
				c.Status.Conditions = []metav1.Condition{{Type: c5c3v1alpha1.NovaReadyCondition, Status: metav1.ConditionFalse,
					Reason: c5c3v1alpha1.WaitingForNovaReason, ObservedGeneration: tt.seen}}
			}
			live := liveNova(cp, desired)
			if tt.live != nil {
				live = tt.live()
			}
			var predicted *novav1alpha1.Nova
			if live != nil {
				predicted = PredictNova(live, tt.spec)
			}
			if got := DecideApplyAhead(c, live, predicted, tt.refused); got != tt.expect {
				t.Errorf("DecideApplyAhead = %t, want %t", got, tt.expect)
			}
		})
	}
}

// applyAheadControlPlane is a ControlPlane with remote computes, whose
// Nova's Keystone URLs and messaging TLS the Nova's rules judge.
func applyAheadControlPlane() *c5c3v1alpha1.ControlPlane {
	cp := minimalControlPlane()
	cp.UID = "cp-uid"
	cp.Spec.Services.Keystone.PublicEndpoint = "https://keystone.example.com/v3"
	cp.Spec.Infrastructure.Messaging.TLS = &c5c3v1alpha1.MessagingTLSSpec{CABundleSecretRef: c5c3v1alpha1.SecretKeyRef{Name: "bus-ca"}}
	cp.Spec.Services.Nova.RemoteCompute = &c5c3v1alpha1.RemoteComputeSpec{TransportURLSecretRef: c5c3v1alpha1.SecretKeyRef{Name: "remote-bus"}}
	cp.Spec.Services.Nova.Replicas = ptr.To[int32](2)
	return cp
}

// liveNova is the ControlPlane's published Nova holding spec.
func liveNova(cp *c5c3v1alpha1.ControlPlane, spec novav1alpha1.NovaSpec) *novav1alpha1.Nova {
	n := &novav1alpha1.Nova{ObjectMeta: metav1.ObjectMeta{Name: NovaName(cp), Namespace: cp.Namespace, Generation: 4}, Spec: *spec.DeepCopy()}
	n.OwnerReferences = []metav1.OwnerReference{{APIVersion: c5c3v1alpha1.GroupVersion.String(), Kind: "ControlPlane",
		Name: cp.Name, UID: cp.UID, Controller: ptr.To(true)}}
	n.Status.ComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: n.Name + novav1alpha1.ComputeConfigSuffix}
	return n
}
