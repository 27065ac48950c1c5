package novacompute

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// allStepsTrue is every step condition True, with reason Done.
func allStepsTrue() []metav1.Condition {
	out := make([]metav1.Condition, 0, len(StepConditions))
	for _, t := range StepConditions {
		out = append(out, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Done", Message: t + " done"})
	}
	return out
}

// stepsWith is allStepsTrue with some conditions replaced or, given a
// zero-status condition, removed.
func stepsWith(over ...metav1.Condition) []metav1.Condition {
	conds := allStepsTrue()
	for _, o := range over {
		if o.Status == "" {
			apimeta.RemoveStatusCondition(&conds, o.Type)
			continue
		}
		apimeta.SetStatusCondition(&conds, o)
	}
	return conds
}

func TestReadyCondition(t *testing.T) {
	falseCond := func(typ, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: "details of " + reason}
	}
	tests := []struct {
		name       string
		conds      []metav1.Condition
		wantStatus metav1.ConditionStatus
		wantReason string
		// wantInMessage are substrings of Ready's message.
		wantInMessage []string
		// notInMessage are substrings Ready's message must not carry.
		notInMessage []string
	}{
		{name: "every step condition True",
			conds: allStepsTrue(), wantStatus: metav1.ConditionTrue, wantReason: novav1alpha1.AllReadyReason},
		{name: "nothing reported yet names the first step",
			wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.NotAllReadyReason,
			wantInMessage: []string{novav1alpha1.NovaReadyCondition, "not been reported"}},
		{name: "one False condition is named with its reason",
			conds:      stepsWith(falseCond(novav1alpha1.DaemonSetReadyCondition, novav1alpha1.DaemonSetProgressingReason)),
			wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.NotAllReadyReason,
			wantInMessage: []string{novav1alpha1.DaemonSetReadyCondition, novav1alpha1.DaemonSetProgressingReason}},
		{name: "the first not-True condition in pipeline order is named",
			conds: stepsWith(
				falseCond(novav1alpha1.TraitsReadyCondition, "TraitsBroken"),
				falseCond(novav1alpha1.NodesReadyCondition, novav1alpha1.NoMatchingNodesReason)),
			wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.NotAllReadyReason,
			wantInMessage: []string{novav1alpha1.NodesReadyCondition, novav1alpha1.NoMatchingNodesReason},
			notInMessage:  []string{novav1alpha1.TraitsReadyCondition, "TraitsBroken"}},
		{name: "an Unknown condition is not True",
			conds:      stepsWith(metav1.Condition{Type: novav1alpha1.ServicesReadyCondition, Status: metav1.ConditionUnknown, Reason: "Checking"}),
			wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.NotAllReadyReason,
			wantInMessage: []string{novav1alpha1.ServicesReadyCondition, "Unknown", "Checking"}},
		{name: "a missing step condition is named",
			conds:      stepsWith(metav1.Condition{Type: novav1alpha1.AggregatesReadyCondition}),
			wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.NotAllReadyReason,
			wantInMessage: []string{novav1alpha1.AggregatesReadyCondition, "not been reported"}},
		{name: "a missing condition comes before a later False one",
			conds: stepsWith(metav1.Condition{Type: novav1alpha1.ConfigReadyCondition},
				falseCond(novav1alpha1.TraitsReadyCondition, "TraitsBroken")),
			wantStatus: metav1.ConditionFalse, wantReason: novav1alpha1.NotAllReadyReason,
			wantInMessage: []string{novav1alpha1.ConfigReadyCondition, "not been reported"},
			notInMessage:  []string{"TraitsBroken"}},
		{name: "ExtraConfigHealthy False does not block Ready",
			conds:      append(allStepsTrue(), falseCond(novav1alpha1.ExtraConfigHealthyCondition, "OverridesManagedKeys")),
			wantStatus: metav1.ConditionTrue, wantReason: novav1alpha1.AllReadyReason,
			notInMessage: []string{novav1alpha1.ExtraConfigHealthyCondition}},
		{name: "a stale Ready False is ignored",
			conds:      append(allStepsTrue(), falseCond(anvilmeta.ReadyCondition, novav1alpha1.NotAllReadyReason)),
			wantStatus: metav1.ConditionTrue, wantReason: novav1alpha1.AllReadyReason},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ReadyCondition(tt.conds, 7)
			if got.Type != anvilmeta.ReadyCondition {
				t.Errorf("type = %s, want %s", got.Type, anvilmeta.ReadyCondition)
			}
			if got.Status != tt.wantStatus || got.Reason != tt.wantReason {
				t.Errorf("Ready = %s/%s (%s), want %s/%s", got.Status, got.Reason, got.Message, tt.wantStatus, tt.wantReason)
			}
			if got.ObservedGeneration != 7 {
				t.Errorf("observedGeneration = %d, want 7", got.ObservedGeneration)
			}
			if got.Message == "" {
				t.Error("message is empty, want an explanation")
			}
			for _, w := range tt.wantInMessage {
				if !strings.Contains(got.Message, w) {
					t.Errorf("message %q does not contain %q", got.Message, w)
				}
			}
			for _, w := range tt.notInMessage {
				if strings.Contains(got.Message, w) {
					t.Errorf("message %q contains %q", got.Message, w)
				}
			}
		})
	}
}

func TestStepConditions(t *testing.T) {
	want := []string{
		novav1alpha1.NovaReadyCondition, novav1alpha1.NodesReadyCondition, novav1alpha1.ConfigReadyCondition,
		novav1alpha1.DaemonSetReadyCondition, novav1alpha1.AggregatesReadyCondition, novav1alpha1.ServicesReadyCondition,
		novav1alpha1.TraitsReadyCondition,
	}
	if strings.Join(StepConditions, ",") != strings.Join(want, ",") {
		t.Errorf("StepConditions = %v, want %v in pipeline order, without ExtraConfigHealthy", StepConditions, want)
	}
}

func TestSetReady(t *testing.T) {
	tests := []struct {
		name       string
		conds      []metav1.Condition
		wantStatus metav1.ConditionStatus
	}{
		{name: "all step conditions True", conds: allStepsTrue(), wantStatus: metav1.ConditionTrue},
		{name: "a step condition False", conds: stepsWith(metav1.Condition{Type: novav1alpha1.NovaReadyCondition, Status: metav1.ConditionFalse, Reason: novav1alpha1.NovaNotFoundReason}),
			wantStatus: metav1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := &novav1alpha1.NovaCompute{ObjectMeta: metav1.ObjectMeta{Generation: 4}}
			p.Status.Conditions = tt.conds
			setReady(p)
			c := findCondition(p, anvilmeta.ReadyCondition)
			if c == nil {
				t.Fatal("setReady set no Ready condition")
			}
			if c.Status != tt.wantStatus || c.ObservedGeneration != 4 {
				t.Errorf("Ready = %s at generation %d, want %s at generation 4", c.Status, c.ObservedGeneration, tt.wantStatus)
			}
		})
	}
}

func TestNodeMetadataChanged(t *testing.T) {
	node := func(labels, annotations map[string]string, heartbeat string) *corev1.Node {
		n := &corev1.Node{}
		n.Labels, n.Annotations = labels, annotations
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Reason: heartbeat}}
		return n
	}
	base := node(map[string]string{"pool": "a"}, map[string]string{"x": "1"}, "t1")
	tests := []struct {
		name    string
		updated *corev1.Node
		want    bool
	}{
		{"a status heartbeat", node(map[string]string{"pool": "a"}, map[string]string{"x": "1"}, "t2"), false},
		{"a label removed", node(map[string]string{}, map[string]string{"x": "1"}, "t1"), true},
		{"a label changed", node(map[string]string{"pool": "b"}, map[string]string{"x": "1"}, "t1"), true},
		{"an annotation added", node(map[string]string{"pool": "a"}, map[string]string{"x": "1", novav1alpha1.CustomTraitsAnnotation: ""}, "t1"), true},
	}
	for _, tt := range tests {
		if got := nodeMetadataChanged(base, tt.updated); got != tt.want {
			t.Errorf("%s: changed = %v, want %v", tt.name, got, tt.want)
		}
	}
}
