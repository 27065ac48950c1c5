package nova

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	anvilmeta "github.com/anvil/anvil/api/meta"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/controller/flow"
	"github.com/anvil/anvil/internal/controller/inputs"
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
// Secret as it was. A remote contract no longer wanted is withdrawn first,
// so that withdrawing a credential never waits on an unrelated bad input.
func (r *Reconciler) reconcileComputeConfig(ctx context.Context, p *pass) (flow.Outcome, error) {
	nova, children := p.nova, p.children
	if nova.Spec.RemoteCompute == nil {
		remote := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: nova.Namespace, Name: RemoteComputeConfigName(nova)}}
		if _, err := children.Delete(ctx, r.Scheme, nova, remote); err != nil {
			return flow.Continue, err
		}
		nova.Status.RemoteComputeConfigSecretRef = nil
	}
	in, err := readContractInput(ctx, children.Reader, nova)
	if err != nil {
		return flow.Continue, computeConfigError(err)
	}
	data, err := novaconfig.RenderContract(*in)
	if err != nil {
		return flow.Continue, computeConfigError(fmt.Errorf("spec: %w", err))
	}
	remoteData, remoteWait, err := renderRemoteContract(ctx, children.Reader, nova, *in)
	if err != nil {
		return flow.Continue, computeConfigError(err)
	}

	if err := children.Apply(ctx, r.Scheme, nova, buildContractSecret(nova, ComputeConfigName(nova), data)); err != nil {
		return flow.Continue, computeConfigError(err)
	}
	nova.Status.ComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: ComputeConfigName(nova)}
	// The control plane's nova.conf is rendered from the same inputs.
	p.contract = in

	published := []string{ComputeConfigName(nova)}
	switch {
	case remoteWait != nil:
		// The in-cluster contract and the later steps go on; the last
		// remote contract is kept until the hand-over arrives.
		conditionsOf(nova).Set(novav1alpha1.ComputeConfigReadyCondition, metav1.ConditionFalse,
			novav1alpha1.WaitingForRemoteTransportURLReason, remoteWait.Error())
		return flow.Requeue(inputWait), nil
	case remoteData != nil:
		if err := children.Apply(ctx, r.Scheme, nova, buildContractSecret(nova, RemoteComputeConfigName(nova), remoteData)); err != nil {
			return flow.Continue, computeConfigError(err)
		}
		nova.Status.RemoteComputeConfigSecretRef = &anvilmeta.LocalObjectReference{Name: RemoteComputeConfigName(nova)}
		published = append(published, RemoteComputeConfigName(nova))
	}
	conditionsOf(nova).Set(novav1alpha1.ComputeConfigReadyCondition, metav1.ConditionTrue, novav1alpha1.ComputeConfigPublishedReason,
		"published "+strings.Join(published, " and "))
	return flow.Continue, nil
}

// renderRemoteContract renders the remote contract while remoteCompute is
// set. A hand-over Secret that is not there yet is returned as remoteWait,
// not as an error.
func renderRemoteContract(ctx context.Context, reader client.Reader, nova *novav1alpha1.Nova, in novaconfig.ContractInput) (data map[string][]byte, remoteWait, err error) {
	rc := nova.Spec.RemoteCompute
	if rc == nil {
		return nil, nil, nil
	}
	const field = "spec.remoteCompute.transportURLSecretRef"
	url, err := inputs.ReadKey(ctx, reader, nova.Namespace, field, rc.TransportURLSecretRef.Name, rc.TransportURLSecretRef.Key)
	var missing *inputs.MissingError
	switch {
	case errors.As(err, &missing):
		return nil, err, nil
	case err != nil:
		return nil, nil, err
	}
	if err := novaconfig.CheckTransportURL(url); err != nil {
		return nil, nil, flow.Invalid(novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.ComputeConfigErrorReason, fmt.Errorf("%s: %w", field, err))
	}
	data, err = novaconfig.RenderRemoteContract(in, novaconfig.RemoteInput{KeystoneEndpoint: rc.KeystoneEndpoint, TransportURL: url})
	if err != nil {
		return nil, nil, fmt.Errorf("spec.remoteCompute: %w", err)
	}
	return data, nil, nil
}

// RenderDeliveredContract renders the contract a compute cluster receives:
// the remote one while remoteCompute is set, else the in-cluster one. It
// reads the same inputs through the same code as the ComputeConfig step,
// so a ControlPlane can deliver a changed input in its own pass instead of
// waiting for the Secret the Nova publishes. A missing input is returned
// as an *inputs.MissingError; no error carries a credential.
func RenderDeliveredContract(ctx context.Context, reader client.Reader, nova *novav1alpha1.Nova) (map[string][]byte, error) {
	in, err := readContractInput(ctx, reader, nova)
	if err != nil {
		return nil, err
	}
	if nova.Spec.RemoteCompute == nil {
		data, err := novaconfig.RenderContract(*in)
		if err != nil {
			return nil, fmt.Errorf("spec: %w", err)
		}
		return data, nil
	}
	data, remoteWait, err := renderRemoteContract(ctx, reader, nova, *in)
	if remoteWait != nil {
		return nil, remoteWait
	}
	return data, err
}

// computeConfigError classifies a failure of the ComputeConfig step: a
// missing input is a wait, input that cannot be rendered or a Secret Anvil
// does not own is invalid, and anything else is retried. Every message is
// built from field names, Secret names, sections and schemes only.
func computeConfigError(err error) error {
	var (
		step     *flow.StepError
		missing  *inputs.MissingError
		unsafe   *novaconfig.UnsafeValueError
		empty    *novaconfig.MissingInputError
		notOwned *targetcluster.NotOwnedError
	)
	switch {
	case errors.As(err, &step):
		return err
	case errors.As(err, &missing):
		return flow.Wait(novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.WaitingForInputsReason, inputWait, "%s", err.Error())
	case errors.As(err, &unsafe), errors.As(err, &empty), errors.As(err, &notOwned):
		return flow.Invalid(novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.ComputeConfigErrorReason, err)
	}
	return err
}

// readContractInput gathers everything the contract is rendered from: the
// spec and the four input Secrets.
func readContractInput(ctx context.Context, reader client.Reader, nova *novav1alpha1.Nova) (*novaconfig.ContractInput, error) {
	spec := nova.Spec
	ns := nova.Namespace
	transportURL, err := inputs.ReadKey(ctx, reader, ns, "spec.messaging.secretRef", spec.Messaging.SecretRef.Name, spec.Messaging.SecretRef.Key)
	if err != nil {
		return nil, err
	}
	if err := novaconfig.CheckTransportURL(transportURL); err != nil {
		return nil, flow.Invalid(novav1alpha1.ComputeConfigReadyCondition, novav1alpha1.ComputeConfigErrorReason,
			fmt.Errorf("spec.messaging.secretRef: %w", err))
	}
	password, err := inputs.ReadKey(ctx, reader, ns, "spec.serviceUser.secretRef", spec.ServiceUser.SecretRef.Name, spec.ServiceUser.SecretRef.Key)
	if err != nil {
		return nil, err
	}
	shared, err := inputs.ReadKey(ctx, reader, ns, "spec.metadata.sharedSecretRef", spec.Metadata.SharedSecretRef.Name, spec.Metadata.SharedSecretRef.Key)
	if err != nil {
		return nil, err
	}
	var caBundle []byte
	if tls := spec.Messaging.TLS; tls != nil {
		ca, err := inputs.ReadKey(ctx, reader, ns, "spec.messaging.tls.caBundleSecretRef", tls.CABundleSecretRef.Name, tls.CABundleSecretRef.Key)
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
		ConsoleProxyEnabled: spec.Console().Enabled,
	}
	if spec.Console().Enabled {
		in.NoVNCProxyBaseURL = noVNCProxyBaseURL(nova)
	}
	return in
}

// noVNCProxyBaseURL is where a browser opens a console: the published
// hostname when there is one, else the proxy's cluster Service.
func noVNCProxyBaseURL(nova *novav1alpha1.Nova) string {
	if h := nova.Spec.Console().Hostname; h != "" {
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
