package webhook

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	"github.com/anvil/anvil/internal/workloadpolicy"
)

// workloadGate is the admission side of the workload policy, shared by the
// webhooks of every privileged kind. Their controllers check the same
// policy again.
type workloadGate struct {
	// Policy is what the operator lets a privileged workload run.
	Policy workloadpolicy.Policy
	// Namespaces reads the object's Namespace for its opt-in label. It
	// reads the apiserver, not a cache, so a label just set or removed
	// counts at once and no informer holds every Namespace.
	Namespaces client.Reader
}

// check returns every way w, in namespace, breaks the policy: its images,
// tolerations and node selectors, and its namespace's opt-in. It fails
// closed: a Namespace that cannot be read refuses the request.
func (g workloadGate) check(ctx context.Context, namespace string, w workloadpolicy.Workload) (field.ErrorList, error) {
	errs := g.Policy.Check(w)
	if g.Namespaces == nil {
		return nil, errors.New("the webhook has no Namespace reader")
	}
	ns := &corev1.Namespace{}
	if err := g.Namespaces.Get(ctx, client.ObjectKey{Name: namespace}, ns); err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("reading namespace %s for its %s label: %w", namespace, anvilmeta.PrivilegedNamespaceLabel, err))
	}
	if err := workloadpolicy.CheckNamespace(ns); err != nil {
		errs = append(errs, err)
	}
	return errs, nil
}

// checkUpdate checks the policy on an update only when what the workload
// runs changed, so that a tightened policy never blocks the teardown or a
// label of an existing object; the controller still refuses to roll such
// an object out.
func (g workloadGate) checkUpdate(ctx context.Context, namespace string, old, w workloadpolicy.Workload) (field.ErrorList, error) {
	// reflect, not equality.Semantic: a Workload holds field paths, whose
	// unexported fields Semantic refuses to compare.
	if reflect.DeepEqual(old, w) {
		return nil, nil
	}
	return g.check(ctx, namespace, w)
}
