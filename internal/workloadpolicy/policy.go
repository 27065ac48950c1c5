// Package workloadpolicy is what the operator lets a privileged kind run.
// A NovaCompute pool, an OVNChassis and a NeutronMetadataAgent each become
// privileged, hostNetwork DaemonSets on the nodes they select: whoever
// steers what they run owns those nodes, and through them the cloud. So
// none of them may choose any image, land on control-plane nodes, or be
// created in a namespace a cluster administrator has not opted in. The
// admission webhooks and the controllers of all three kinds ask this
// package, so an object that bypassed admission is refused again before
// anything is written for it. Only ReadOptIn talks to an apiserver; the
// rest is pure.
package workloadpolicy

import (
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// DefaultImageRepositories are the repositories a privileged workload may
// run when the operator is not told otherwise: Anvil's own images.
var DefaultImageRepositories = []string{"ghcr.io/c5c3/"}

// controlPlaneTaints are the taints kubeadm and most distributions put on
// control-plane nodes.
var controlPlaneTaints = []corev1.Taint{
	{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule},
	{Key: "node-role.kubernetes.io/master", Effect: corev1.TaintEffectNoSchedule},
}

// controlPlaneLabels are the node labels that mark control-plane nodes; a
// selector naming one of them asks for those nodes, whatever the value.
var controlPlaneLabels = []string{
	"node-role.kubernetes.io/control-plane",
	"node-role.kubernetes.io/master",
}

// Policy limits what a privileged workload may run.
type Policy struct {
	// ImageRepositories an image may come from. An entry ending in "/"
	// admits every repository below it; any other entry admits exactly
	// that repository. Empty means DefaultImageRepositories.
	ImageRepositories []string
	// RequireDigests refuses an image selected by tag alone, defaults
	// included: a tag can be moved to other code after the image was
	// reviewed, a digest cannot.
	RequireDigests bool
}

// Workload is what one object of a privileged kind asks to run, with the
// field path of each input, so that a refusal names the field to fix.
type Workload struct {
	// Kind names the workload in messages ("a pool", "a chassis").
	Kind string
	// Images are the image repositories its pods run.
	Images []Image
	// Tolerations are copied to its pods; TolerationsPath is their field.
	Tolerations     []corev1.Toleration
	TolerationsPath *field.Path
	// NodeSelectors choose its nodes.
	NodeSelectors []NodeSelector
}

// Image is one image repository and the field it came from; for a
// defaulted image the path is the unset field. Digest is the image's
// digest, empty when it is selected by tag; DigestPath is its field, nil
// for a defaulted image, whose tag Anvil chooses.
type Image struct {
	Path       *field.Path
	Repository string
	Digest     string
	DigestPath *field.Path
}

// NodeSelector is one node selector and its field.
type NodeSelector struct {
	Path   *field.Path
	Labels map[string]string
}

// Check returns every way w breaks the policy, by field.
func (p Policy) Check(w Workload) field.ErrorList {
	var errs field.ErrorList
	for _, img := range w.Images {
		if !p.allows(img.Repository) {
			errs = append(errs, field.Forbidden(img.Path, fmt.Sprintf(
				"repository %s is not allowed: this operator runs privileged workloads only from %s (its --allowed-image-repositories), since %s runs privileged on every node it selects",
				img.Repository, strings.Join(p.repositories(), ", "), w.Kind)))
		}
		if err := p.checkDigest(img, w.Kind); err != nil {
			errs = append(errs, err)
		}
	}
	for i := range w.Tolerations {
		if err := checkToleration(w.TolerationsPath.Index(i), w.Kind, &w.Tolerations[i]); err != nil {
			errs = append(errs, err)
		}
	}
	for _, sel := range w.NodeSelectors {
		errs = append(errs, checkNodeSelector(sel, w.Kind)...)
	}
	return errs
}

// checkDigest refuses an image without a digest when digests are
// required. A defaulted image is named by its unset field, since the fix
// is to set it, with a digest.
func (p Policy) checkDigest(img Image, kind string) *field.Error {
	if !p.RequireDigests || img.Digest != "" {
		return nil
	}
	if img.DigestPath == nil {
		return field.Required(img.Path, fmt.Sprintf(
			"must be set with a digest: this operator runs with --require-image-digests, and the default image of %s is selected by tag", kind))
	}
	return field.Required(img.DigestPath, fmt.Sprintf(
		"is required: this operator runs with --require-image-digests, since %s runs privileged and a tag can be moved to other code after review", kind))
}

// checkToleration refuses a toleration that lets the workload onto nodes
// nobody meant for it. A keyless Exists is refused whatever its effect:
// kubeadm's control-plane taints are NoSchedule, but other distributions
// fence their control plane with NoExecute taints (RKE's
// node-role.kubernetes.io/etcd, k3s's CriticalAddonsOnly), and which
// taints a cluster uses is not this package's to enumerate. Only a named
// key says which nodes are meant.
func checkToleration(path *field.Path, kind string, t *corev1.Toleration) *field.Error {
	if t.Operator == corev1.TolerationOpExists && t.Key == "" {
		return field.Forbidden(path, fmt.Sprintf(
			"tolerates every %s (operator Exists without a key): %s runs privileged on the host network and must never run on a node whose taints keep workloads out, control-plane nodes included; set key to the taint of the hypervisor nodes",
			taintsOf(t.Effect), kind))
	}
	for j := range controlPlaneTaints {
		if t.ToleratesTaint(logr.Discard(), &controlPlaneTaints[j], false) {
			return field.Forbidden(path, fmt.Sprintf(
				"tolerates the control-plane taint %s: %s runs privileged on the host network and must never run on a control-plane node; name the taints of the hypervisor nodes instead",
				controlPlaneTaints[j].Key, kind))
		}
	}
	return nil
}

// checkNodeSelector refuses a selector that asks for control-plane nodes.
// Tolerations keep a workload off tainted control-plane nodes; this keeps
// it off those a cluster left untainted.
func checkNodeSelector(sel NodeSelector, kind string) field.ErrorList {
	var errs field.ErrorList
	for _, key := range controlPlaneLabels {
		if _, ok := sel.Labels[key]; ok {
			errs = append(errs, field.Forbidden(sel.Path.Key(key), fmt.Sprintf(
				"selects control-plane nodes: %s runs privileged on the host network and must never run on one; select the hypervisor nodes by their own label", kind)))
		}
	}
	return errs
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
