package inputs

import (
	"context"
	"errors"
	"fmt"

	"sigs.k8s.io/controller-runtime/pkg/client"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

const (
	// CellName is the cell every compute is mapped into.
	CellName = "cell1"
	// NoVNCProxyPort is where a Nova's console proxy Service listens.
	NoVNCProxyPort = 6080
)

// InvalidError is an input that is there but cannot be used, such as a
// transport URL that is not rabbit://. It names the field and never the
// value.
type InvalidError struct {
	Field string
	Err   error
}

func (e *InvalidError) Error() string { return e.Field + ": " + e.Err.Error() }

func (e *InvalidError) Unwrap() error { return e.Err }

// NovaContract reads everything a Nova's in-cluster contract is rendered
// from: the spec and the input Secrets. The Nova's ComputeConfig step and
// a ControlPlane's delivery both read it here, so they render the same
// bytes from the same inputs.
func NovaContract(ctx context.Context, reader client.Reader, nova *novav1alpha1.Nova) (*novaconfig.ContractInput, error) {
	spec := nova.Spec
	ns := nova.Namespace
	transportURL, err := ReadKey(ctx, reader, ns, "spec.messaging.secretRef", spec.Messaging.SecretRef.Name, spec.Messaging.SecretRef.Key)
	if err != nil {
		return nil, err
	}
	if err := novaconfig.CheckTransportURL(transportURL); err != nil {
		return nil, &InvalidError{Field: "spec.messaging.secretRef", Err: err}
	}
	password, err := ReadKey(ctx, reader, ns, "spec.serviceUser.secretRef", spec.ServiceUser.SecretRef.Name, spec.ServiceUser.SecretRef.Key)
	if err != nil {
		return nil, err
	}
	shared, err := ReadKey(ctx, reader, ns, "spec.metadata.sharedSecretRef", spec.Metadata.SharedSecretRef.Name, spec.Metadata.SharedSecretRef.Key)
	if err != nil {
		return nil, err
	}
	var caBundle []byte
	if tls := spec.Messaging.TLS; tls != nil {
		ca, err := ReadKey(ctx, reader, ns, "spec.messaging.tls.caBundleSecretRef", tls.CABundleSecretRef.Name, tls.CABundleSecretRef.Key)
		if err != nil {
			return nil, err
		}
		caBundle = []byte(ca)
	}
	in := contractSpec(nova)
	in.TransportURL, in.Password, in.MetadataSharedSecret, in.CABundle = transportURL, password, shared, caBundle
	return &in, nil
}

// NovaRemote reads what the remote contract adds, or returns nil while
// remoteCompute is unset. A hand-over Secret that is not there yet is a
// *MissingError.
func NovaRemote(ctx context.Context, reader client.Reader, nova *novav1alpha1.Nova) (*novaconfig.RemoteInput, error) {
	rc := nova.Spec.RemoteCompute
	if rc == nil {
		return nil, nil
	}
	const field = "spec.remoteCompute.transportURLSecretRef"
	url, err := ReadKey(ctx, reader, nova.Namespace, field, rc.TransportURLSecretRef.Name, rc.TransportURLSecretRef.Key)
	if err != nil {
		return nil, err
	}
	if err := novaconfig.CheckTransportURL(url); err != nil {
		return nil, &InvalidError{Field: field, Err: err}
	}
	return &novaconfig.RemoteInput{KeystoneEndpoint: rc.KeystoneEndpoint, TransportURL: url}, nil
}

// DeliveredNovaContract renders the contract a compute cluster receives:
// the remote one while remoteCompute is set, else the in-cluster one. A
// missing input is a *MissingError, an unusable one an *InvalidError; no
// error carries a credential.
func DeliveredNovaContract(ctx context.Context, reader client.Reader, nova *novav1alpha1.Nova) (map[string][]byte, error) {
	in, err := NovaContract(ctx, reader, nova)
	if err != nil {
		return nil, err
	}
	remote, err := NovaRemote(ctx, reader, nova)
	if err != nil {
		return nil, err
	}
	return novaconfig.RenderDelivered(*in, remote)
}

// IsMissing tells whether err is a *MissingError.
func IsMissing(err error) bool {
	var missing *MissingError
	return errors.As(err, &missing)
}

// IsInvalid tells whether err is an input that is there but cannot be
// rendered: a *InvalidError, or a value the renderer refuses. The Nova and
// the ControlPlane both hold it as terminal until the user mends it.
func IsInvalid(err error) bool {
	var (
		invalid *InvalidError
		unsafe  *novaconfig.UnsafeValueError
		empty   *novaconfig.MissingInputError
	)
	return errors.As(err, &invalid) || errors.As(err, &unsafe) || errors.As(err, &empty)
}

// contractSpec is the spec part of the contract input; the credentials
// are filled in by NovaContract.
func contractSpec(nova *novav1alpha1.Nova) novaconfig.ContractInput {
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
		CellName:            CellName,
		ConsoleProxyEnabled: spec.Console().Enabled,
	}
	if spec.Console().Enabled {
		in.NoVNCProxyBaseURL = NoVNCProxyBaseURL(nova)
	}
	return in
}

// NoVNCProxyBaseURL is where a browser opens a Nova's console: the
// published hostname when there is one, else the proxy's cluster Service.
func NoVNCProxyBaseURL(nova *novav1alpha1.Nova) string {
	if h := nova.Spec.Console().Hostname; h != "" {
		return "https://" + h + "/vnc_lite.html"
	}
	return fmt.Sprintf("http://%s-novncproxy.%s.svc:%d/vnc_lite.html", nova.Name, nova.Namespace, NoVNCProxyPort)
}
