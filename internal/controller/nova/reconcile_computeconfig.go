package nova

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/novaconfig"
	"github.com/anvil/anvil/internal/targetcluster"
)

const (
	// cellName is the cell every compute is mapped into.
	cellName = "cell1"
	// inputWait polls for a missing input as a safety net; the Secret watch
	// normally brings the next pass first.
	inputWait = time.Minute
	// noVNCProxyPort is where the console proxy's Service listens.
	noVNCProxyPort = 6080
)

// missingInputError says which input Secret or key is missing. It names the
// spec field and the Secret, never a value.
type missingInputError struct {
	field, namespace, name, key string
	secretMissing               bool
}

func (e *missingInputError) Error() string {
	if e.secretMissing {
		return fmt.Sprintf("%s: Secret %s/%s does not exist", e.field, e.namespace, e.name)
	}
	return fmt.Sprintf("%s: Secret %s/%s has no non-empty key %q", e.field, e.namespace, e.name, e.key)
}

// ComputeConfigName is the name of a Nova's in-cluster contract.
func ComputeConfigName(nova *novav1alpha1.Nova) string {
	return nova.Name + novav1alpha1.ComputeConfigSuffix
}

// RemoteComputeConfigName is the name of a Nova's remote contract.
func RemoteComputeConfigName(nova *novav1alpha1.Nova) string {
	return nova.Name + novav1alpha1.RemoteComputeConfigSuffix
}

// reconcileComputeConfig publishes the in-cluster contract and, while
// remoteCompute is set, the remote one. Both are rendered before either is
// written, so an input that cannot be rendered leaves every published
// Secret as it was.
func (r *Reconciler) reconcileComputeConfig(ctx context.Context, nova *novav1alpha1.Nova, children *targetcluster.Children) (flow.Outcome, error) {
	in, err := readContractInput(ctx, children.Reader, nova)
	if err != nil {
		return r.computeConfigFailed(nova, err)
	}
	data, err := novaconfig.RenderContract(*in)
	if err != nil {
		return r.computeConfigFailed(nova, fmt.Errorf("spec: %w", err))
	}

	var remoteData map[string][]byte
	var remoteWait error
	if rc := nova.Spec.RemoteCompute; rc != nil {
		url, err := readKey(ctx, children.Reader, nova.Namespace, "spec.remoteCompute.transportURLSecretRef", rc.TransportURLSecretRef.Name, rc.TransportURLSecretRef.Key)
		var missing *missingInputError
		switch {
		case errors.As(err, &missing):
			// The in-cluster contract goes on; the last remote contract is
			// kept until the hand-over arrives.
			remoteWait = err
		case err != nil:
			return flow.Continue, err
		default:
			if err := novaconfig.CheckTransportURL(url); err != nil {
				return r.computeConfigFailed(nova, flow.Invalid(fmt.Errorf("spec.remoteCompute.transportURLSecretRef: %w", err)))
			}
			remoteData, err = novaconfig.RenderRemoteContract(*in, novaconfig.RemoteInput{KeystoneEndpoint: rc.KeystoneEndpoint, TransportURL: url})
			if err != nil {
				return r.computeConfigFailed(nova, fmt.Errorf("spec.remoteCompute: %w", err))
			}
		}
	}

	if err := children.ApplySecret(ctx, r.Scheme, nova, buildContractSecret(nova, ComputeConfigName(nova), data)); err != nil {
		return r.computeConfigFailed(nova, err)
	}
	nova.Status.ComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: ComputeConfigName(nova)}
	// Anvil references a brownfield control plane rather than installing
	// one, so the release it runs is the one the contract was just
	// published from; pools default their image to it.
	nova.Status.InstalledRelease = nova.Spec.OpenStackRelease

	switch {
	case nova.Spec.RemoteCompute == nil:
		if err := children.DeleteSecret(ctx, r.Scheme, nova, nova.Namespace, RemoteComputeConfigName(nova)); err != nil {
			return flow.Continue, err
		}
		nova.Status.RemoteComputeConfigSecretRef = nil
	case remoteWait != nil:
		setComputeConfigReady(nova, metav1.ConditionFalse,
			novav1alpha1.WaitingForRemoteTransportURLReason, remoteWait.Error())
		return flow.Wait(inputWait), nil
	default:
		if err := children.ApplySecret(ctx, r.Scheme, nova, buildContractSecret(nova, RemoteComputeConfigName(nova), remoteData)); err != nil {
			return r.computeConfigFailed(nova, err)
		}
		nova.Status.RemoteComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: RemoteComputeConfigName(nova)}
	}

	published := []string{ComputeConfigName(nova)}
	if nova.Status.RemoteComputeConfigSecretRef != nil {
		published = append(published, RemoteComputeConfigName(nova))
	}
	setComputeConfigReady(nova, metav1.ConditionTrue, novav1alpha1.ComputeConfigPublishedReason,
		"published "+strings.Join(published, " and "))
	return flow.Continue, nil
}

// computeConfigFailed reports err on ComputeConfigReady and decides how the
// pass goes on. Every message is built from field names, Secret names,
// sections and schemes only.
func (r *Reconciler) computeConfigFailed(nova *novav1alpha1.Nova, err error) (flow.Outcome, error) {
	var (
		missing  *missingInputError
		unsafe   *novaconfig.UnsafeValueError
		empty    *novaconfig.MissingInputError
		notOwned *targetcluster.NotOwnedError
		invalid  *flow.InvalidInputError
	)
	switch {
	case errors.As(err, &missing):
		setComputeConfigReady(nova, metav1.ConditionFalse, novav1alpha1.WaitingForInputsReason, err.Error())
		return flow.WaitAndHalt(inputWait), nil
	case errors.As(err, &unsafe), errors.As(err, &empty), errors.As(err, &notOwned), errors.As(err, &invalid):
		setComputeConfigReady(nova, metav1.ConditionFalse, novav1alpha1.ComputeConfigErrorReason, err.Error())
		return flow.Halt, flow.Invalid(err)
	default:
		return flow.Halt, err
	}
}

// readContractInput gathers everything the contract is rendered from: the
// spec and the four input Secrets.
func readContractInput(ctx context.Context, reader client.Reader, nova *novav1alpha1.Nova) (*novaconfig.ContractInput, error) {
	spec := nova.Spec
	ns := nova.Namespace
	transportURL, err := readKey(ctx, reader, ns, "spec.messaging.secretRef", spec.Messaging.SecretRef.Name, spec.Messaging.SecretRef.Key)
	if err != nil {
		return nil, err
	}
	if err := novaconfig.CheckTransportURL(transportURL); err != nil {
		return nil, flow.Invalid(fmt.Errorf("spec.messaging.secretRef: %w", err))
	}
	password, err := readKey(ctx, reader, ns, "spec.serviceUser.secretRef", spec.ServiceUser.SecretRef.Name, spec.ServiceUser.SecretRef.Key)
	if err != nil {
		return nil, err
	}
	shared, err := readKey(ctx, reader, ns, "spec.metadata.sharedSecretRef", spec.Metadata.SharedSecretRef.Name, spec.Metadata.SharedSecretRef.Key)
	if err != nil {
		return nil, err
	}
	var caBundle []byte
	if tls := spec.Messaging.TLS; tls != nil {
		ca, err := readKey(ctx, reader, ns, "spec.messaging.tls.caBundleSecretRef", tls.CABundleSecretRef.Name, tls.CABundleSecretRef.Key)
		if err != nil {
			return nil, err
		}
		caBundle = []byte(ca)
	}
	in := buildContractInput(nova)
	in.TransportURL, in.Password, in.MetadataSharedSecret, in.CABundle = transportURL, password, shared, caBundle
	return &in, nil
}

// buildContractInput renders the spec part of the contract input; the
// credentials are filled in by the caller.
func buildContractInput(nova *novav1alpha1.Nova) novaconfig.ContractInput {
	spec := nova.Spec
	in := novaconfig.ContractInput{
		Debug:                  spec.Logging.Debug,
		KeystoneEndpoint:       spec.KeystoneEndpoint,
		KeystonePublicEndpoint: spec.KeystonePublicEndpoint,
		Region:                 spec.Region,
		ServiceUser: novaconfig.ServiceUser{
			Username:          spec.ServiceUser.Username,
			ProjectName:       spec.ServiceUser.ProjectName,
			UserDomainName:    spec.ServiceUser.UserDomainName,
			ProjectDomainName: spec.ServiceUser.ProjectDomainName,
		},
		PlacementOverride:   spec.Endpoints.Placement.Override,
		NeutronOverride:     spec.Endpoints.Neutron.Override,
		GlanceOverride:      spec.Endpoints.Glance.Override,
		Cinder:              novaconfig.OptionalService{Enabled: spec.Endpoints.Cinder.Enabled, Override: spec.Endpoints.Cinder.Override},
		Barbican:            novaconfig.OptionalService{Enabled: spec.Endpoints.Barbican.Enabled, Override: spec.Endpoints.Barbican.Override},
		CellName:            cellName,
		ConsoleProxyEnabled: spec.ConsoleProxy.Enabled,
	}
	if spec.ConsoleProxy.Enabled {
		in.NoVNCProxyBaseURL = noVNCProxyBaseURL(nova)
	}
	return in
}

// noVNCProxyBaseURL is where a browser opens a console: the published
// hostname when there is one, else the proxy's cluster Service.
func noVNCProxyBaseURL(nova *novav1alpha1.Nova) string {
	if h := nova.Spec.ConsoleProxy.Hostname; h != "" {
		return "https://" + h + "/vnc_lite.html"
	}
	return fmt.Sprintf("http://%s-novncproxy.%s.svc:%d/vnc_lite.html", nova.Name, nova.Namespace, noVNCProxyPort)
}

// buildContractSecret renders a contract Secret from its data.
func buildContractSecret(nova *novav1alpha1.Nova, name string, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: nova.Namespace,
			Labels:    map[string]string{novav1alpha1.ComponentLabel: novav1alpha1.ComputeConfigComponent},
		},
		Type: corev1.SecretTypeOpaque,
		Data: data,
	}
}

// readKey returns a non-empty Secret value, or a *missingInputError naming
// the field, the Secret and the key.
func readKey(ctx context.Context, reader client.Reader, namespace, field, name, key string) (string, error) {
	s := &corev1.Secret{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			return "", &missingInputError{field: field, namespace: namespace, name: name, key: key, secretMissing: true}
		}
		return "", fmt.Errorf("%s: reading Secret %s/%s: %w", field, namespace, name, err)
	}
	v := s.Data[key]
	if len(v) == 0 {
		return "", &missingInputError{field: field, namespace: namespace, name: name, key: key}
	}
	return string(v), nil
}
