package gateway

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// verdict is the outcome of one check: ok, or why not. Its reason and
// message become a condition, so they are written for the reader of
// `kubectl get -o yaml`.
type verdict struct {
	ok      bool
	reason  string
	message string
}

// pass is a verdict that holds with the given reason and message.
func pass(reason, message string) verdict { return verdict{ok: true, reason: reason, message: message} }

// fail is a verdict that does not hold.
func fail(reason, message string) verdict { return verdict{reason: reason, message: message} }

// condition renders a verdict as a condition of the given type for an
// object's generation.
func condition(condType string, v verdict, generation int64) metav1.Condition {
	status := metav1.ConditionFalse
	if v.ok {
		status = metav1.ConditionTrue
	}
	return metav1.Condition{
		Type: condType, Status: status, Reason: v.reason, Message: v.message, ObservedGeneration: generation,
	}
}

// mergeConditions returns desired with each condition's lastTransitionTime
// taken from existing when its status did not change, and set to now
// otherwise. Conditions not in desired are dropped: this controller owns
// every condition of the status it writes. Keeping the old times is what
// lets an unchanged status compare equal, so that a settled system writes
// nothing.
func mergeConditions(existing, desired []metav1.Condition, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, 0, len(desired))
	for _, d := range desired {
		d.LastTransitionTime = now
		for _, e := range existing {
			if e.Type == d.Type && e.Status == d.Status {
				d.LastTransitionTime = e.LastTransitionTime
			}
		}
		out = append(out, d)
	}
	return out
}
