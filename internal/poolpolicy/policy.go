// Package poolpolicy is what the operator lets a NovaCompute pool run. A
// pool becomes a privileged, hostNetwork DaemonSet on every node it
// selects, so whoever may create a pool must not choose any image, land on
// control-plane nodes, or create one in a namespace a cluster administrator
// has not opted in. The admission webhook and the pool controller
// both ask this package, so a pool that bypassed admission is refused again
// before anything is written. It is pure.
package poolpolicy

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// DefaultImageRepositories are the repositories a pool may run when the
// operator is not told otherwise: Anvil's own images.
var DefaultImageRepositories = []string{"ghcr.io/c5c3/"}

// controlPlaneTaints are the taints kubeadm and most distributions put on
// control-plane nodes.
var controlPlaneTaints = []corev1.Taint{
	{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
	{Key: "node-role.kubernetes.io/master", Effect: corev1.TaintEffectNoSchedule},
}

// Policy limits what a pool may run.
type Policy struct {
	// ImageRepositories a pool's image may come from. An entry ending in
	// "/" admits every repository below it; any other entry admits exactly
	// that repository. Empty means DefaultImageRepositories.
	ImageRepositories []string
}

// Check returns every way pool breaks the policy, by field.
func (p Policy) Check(pool *novav1alpha1.NovaCompute) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	repo := novav1alpha1.DefaultComputeImageRepository
	path := spec.Child("image")
	if img := pool.Spec.Image; img != nil {
		repo, path = img.Repository, path.Child("repository")
	}
	if !p.allows(repo) {
		errs = append(errs, field.Forbidden(path, fmt.Sprintf(
			"repository %s is not allowed: this operator runs pools only from %s (its --allowed-image-repositories), since a pool runs privileged on every node it selects",
			repo, strings.Join(p.repositories(), ", "))))
	}
	for i := range pool.Spec.Tolerations {
		if err := checkToleration(spec.Child("tolerations").Index(i), &pool.Spec.Tolerations[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// checkToleration refuses a toleration that lets the pool onto nodes
// nobody meant for it. A keyless Exists is refused whatever its effect:
// kubeadm's control-plane taints are NoSchedule, but other distributions
// fence their control plane with NoExecute taints (RKE's
// node-role.kubernetes.io/etcd, k3s's CriticalAddonsOnly), and which
// taints a cluster uses is not this package's to enumerate. Only a named
// key says which nodes are meant.
func checkToleration(path *field.Path, t *corev1.Toleration) *field.Error {
	if t.Operator == corev1.TolerationOpExists && t.Key == "" {
		return field.Forbidden(path, fmt.Sprintf(
			"tolerates every %s (operator Exists without a key): a privileged hostNetwork nova-compute must never run on a node whose taints keep workloads out, control-plane nodes included; set key to the taint of the hypervisor nodes",
			taintsOf(t.Effect)))
	}
	for j := range controlPlaneTaints {
		if t.ToleratesTaint(logr.Discard(), &controlPlaneTaints[j], false) {
			return field.Forbidden(path, fmt.Sprintf(
				"tolerates the control-plane taint %s: a privileged hostNetwork nova-compute must never run on a control-plane node; name the taints of the hypervisor nodes instead of tolerating everything",
				controlPlaneTaints[j].Key))
		}
	}
	return nil
}

// taintsOf names the taints a keyless toleration with effect e covers; an
// empty effect covers every effect.
func taintsOf(e corev1.TaintEffect) string {
	if e == "" {
		return "taint"
	}
	return string(e) + " taint"
}

// repositories returns the allowlist in effect.
func (p Policy) repositories() []string {
	if len(p.ImageRepositories) == 0 {
		return DefaultImageRepositories
	}
	return p.ImageRepositories
}

// allows tells whether repo is on the allowlist.
func (p Policy) allows(repo string) bool {
	for _, allowed := range p.repositories() {
		prefix := strings.HasSuffix(allowed, "/")
		if (!prefix && repo == allowed) || (prefix && strings.HasPrefix(repo, allowed) && len(repo) > len(allowed)) {
			return true
		}
	}
	return false
}
