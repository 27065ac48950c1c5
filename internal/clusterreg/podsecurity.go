package clusterreg

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The Pod Security Admission labels the target-cluster-access chart sets on
// the Namespaces it creates.
const (
	// PodSecurityEnforceLabel holds the level Pod Security Admission
	// enforces in a namespace: privileged, baseline or restricted.
	PodSecurityEnforceLabel = "pod-security.kubernetes.io/enforce"
	// PodSecurityWarnLabel holds the level Pod Security Admission warns at.
	PodSecurityWarnLabel = "pod-security.kubernetes.io/warn"
	// PodSecurityAuditLabel holds the level Pod Security Admission audits at.
	PodSecurityAuditLabel = "pod-security.kubernetes.io/audit"
)

// ErrUnlabelledNamespace is wrapped by the error Register returns when a
// namespace of the registration lacks the Pod Security labels the access
// chart sets on the namespaces it creates. The chart cannot label a
// namespace it did not create (createNamespaces: false), so Register is
// where the gap is caught: an unlabelled namespace takes the cluster's
// default level, usually privileged, and the registration's token may
// create Deployments there, so whoever holds it could run privileged pods.
var ErrUnlabelledNamespace = errors.New("refusing to register: namespaces of the registration lack the Pod Security labels the target-cluster-access chart sets on the namespaces it creates")

// namespaceState is what the Pod Security check knows of one namespace of
// the registration on the compute cluster.
type namespaceState struct {
	name   string
	exists bool
	labels map[string]string
	// privileged is true when the chart's ServiceAccount may create
	// DaemonSets in the namespace, which the chart grants exactly in its
	// privilegedNamespaces.
	privileged bool
}

// baselineFix is the command that labels a namespace as the chart labels
// one that is not privileged.
func baselineFix(ns string) string {
	return fmt.Sprintf("kubectl label --overwrite namespace %s %s=baseline %s=restricted %s=restricted",
		ns, PodSecurityEnforceLabel, PodSecurityWarnLabel, PodSecurityAuditLabel)
}

// privilegedFix is the command that labels a namespace as the chart labels
// one of its privilegedNamespaces.
func privilegedFix(ns string) string {
	return fmt.Sprintf("kubectl label --overwrite namespace %s %s=privileged", ns, PodSecurityEnforceLabel)
}

// podSecurityProblem decides whether a namespace carries the Pod Security
// enforce level the access chart would have given it, and returns "" when
// it does, or else a sentence naming the namespace, what is wrong and the
// command that fixes it. Only enforce counts: warn and audit report and
// refuse nothing, so the fix sets them but the check does not ask for them.
func podSecurityProblem(ns namespaceState) string {
	level, labelled := ns.labels[PodSecurityEnforceLabel]
	switch {
	case !ns.exists:
		return fmt.Sprintf("namespace %s does not exist on the compute cluster; list it in the access chart's namespaces with createNamespaces=true, or create and label it: kubectl create namespace %s && %s",
			ns.name, ns.name, baselineFix(ns.name))
	case ns.privileged && level == "privileged":
		return ""
	case ns.privileged:
		// Not a hole, since the level is stricter or the cluster's default,
		// but the node agents fail under anything stricter than privileged,
		// and the chart would have set it.
		return fmt.Sprintf("namespace %s is one of the access chart's privileged namespaces (Anvil's account may manage DaemonSets there) but has %s, where the chart sets %s=privileged for the node agents; label it: %s",
			ns.name, describeLevel(level, labelled), PodSecurityEnforceLabel, privilegedFix(ns.name))
	case level == "baseline" || level == "restricted":
		return ""
	case level == "privileged":
		return fmt.Sprintf("namespace %s has %s=privileged, but the access chart does not treat it as privileged (Anvil's account may not manage DaemonSets there), so the privileged level only lets the registration's token run privileged pods through a Deployment; label it: %s",
			ns.name, PodSecurityEnforceLabel, baselineFix(ns.name))
	case !labelled:
		return fmt.Sprintf("namespace %s has no %s label, so the cluster's default level applies, which is privileged unless the cluster configures another, and the registration's token may create Deployments there; label it: %s",
			ns.name, PodSecurityEnforceLabel, baselineFix(ns.name))
	default:
		return fmt.Sprintf("namespace %s has %s, which is neither baseline nor restricted; label it: %s",
			ns.name, describeLevel(level, labelled), baselineFix(ns.name))
	}
}

// describeLevel says what a namespace's enforce label holds, for messages.
func describeLevel(level string, labelled bool) string {
	if !labelled {
		return "no " + PodSecurityEnforceLabel + " label"
	}
	return fmt.Sprintf("%s=%q", PodSecurityEnforceLabel, level)
}

// checkPodSecurity refuses a registration when a namespace it is scoped to
// lacks the Pod Security enforce level the access chart would have set,
// naming each namespace and the command that labels it. With
// opts.AllowUnlabelledNamespaces it prints each problem to out as a warning
// instead. A cluster-wide registration (namespaces "") names no namespace,
// so nothing is checked.
func checkPodSecurity(ctx context.Context, cs kubernetes.Interface, opts Options, namespaces string, out io.Writer) error {
	if namespaces == "" {
		return nil
	}
	var problems []string
	for _, name := range strings.Split(namespaces, ",") {
		state, err := inspectNamespace(ctx, cs, opts, name)
		if err != nil {
			if !opts.AllowUnlabelledNamespaces {
				return fmt.Errorf("%w; the registrant needs get on namespaces and create on localsubjectaccessreviews on the compute cluster (--allow-unlabelled-namespaces registers without the check)", err)
			}
			problems = append(problems, err.Error())
			continue
		}
		if p := podSecurityProblem(state); p != "" {
			problems = append(problems, p)
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if !opts.AllowUnlabelledNamespaces {
		return fmt.Errorf("%w:\n  - %s", ErrUnlabelledNamespace, strings.Join(problems, "\n  - "))
	}
	for _, p := range problems {
		fmt.Fprintf(out, "warning: %s; registering anyway because of --allow-unlabelled-namespaces\n", p)
	}
	return nil
}

// inspectNamespace reads a namespace's labels and whether the chart's
// ServiceAccount may create DaemonSets there. A missing namespace is not an
// error; podSecurityProblem reports it.
func inspectNamespace(ctx context.Context, cs kubernetes.Interface, opts Options, name string) (namespaceState, error) {
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return namespaceState{name: name}, nil
	}
	if err != nil {
		return namespaceState{}, fmt.Errorf("reading namespace %s on the compute cluster to check its Pod Security labels: %w", name, err)
	}
	privileged, err := mayManageDaemonSets(ctx, cs, opts, name)
	if err != nil {
		return namespaceState{}, err
	}
	return namespaceState{name: name, exists: true, labels: ns.Labels, privileged: privileged}, nil
}

// mayManageDaemonSets asks the compute cluster whether the chart's
// ServiceAccount may create DaemonSets in namespace. The chart grants that
// in its privilegedNamespaces and nowhere else, so the answer tells which
// Pod Security level the chart gives the namespace, whatever the release
// is called and however its values were set. A LocalSubjectAccessReview
// needs only what the namespace's admin role grants.
func mayManageDaemonSets(ctx context.Context, cs kubernetes.Interface, opts Options, namespace string) (bool, error) {
	review := &authorizationv1.LocalSubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace},
		Spec: authorizationv1.SubjectAccessReviewSpec{
			// The user and groups the apiserver gives a ServiceAccount's token.
			User: "system:serviceaccount:" + opts.AccessNamespace + ":" + opts.ServiceAccount,
			Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + opts.AccessNamespace,
				"system:authenticated"},
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Namespace: namespace, Verb: "create", Group: "apps", Resource: "daemonsets",
			},
		},
	}
	got, err := cs.AuthorizationV1().LocalSubjectAccessReviews(namespace).Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking the compute cluster whether ServiceAccount %s/%s may create DaemonSets in namespace %s: %w",
			opts.AccessNamespace, opts.ServiceAccount, namespace, err)
	}
	return got.Status.Allowed, nil
}
