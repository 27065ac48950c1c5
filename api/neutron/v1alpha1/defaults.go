package v1alpha1

// Defaults that are resolved on every pass instead of written by the
// apiserver, so that the stored spec is what the user wrote and a later
// Anvil release can change a default for every agent that did not set it.
// The image has no default: the agent must match the cloud's Neutron.
const (
	// DefaultNovaMetadataPort is spec.novaMetadata.port's default, the
	// port Nova's metadata API listens on.
	DefaultNovaMetadataPort int32 = 8775
	// DefaultNovaMetadataProtocol is spec.novaMetadata.protocol's default.
	DefaultNovaMetadataProtocol = ProtocolHTTP
	// DefaultCABundleKey is spec.novaMetadata.caBundleSecretRef.key's
	// default.
	DefaultCABundleKey = "ca.crt"
	// DefaultSharedSecretKey is spec.novaMetadata.sharedSecretRef.key's
	// default, the key of the ControlPlane's copy.
	DefaultSharedSecretKey = "shared_secret"
	// DefaultMetadataWorkers is spec.metadataWorkers' default.
	DefaultMetadataWorkers int32 = 4
)

// MinOpenStackRelease is the oldest release an agent may be created with,
// or changed to: the oldest release Anvil runs the agent for.
const MinOpenStackRelease = "2026.1"

// ResolvedImage is the agent's image reference, repository:tag or
// repository@digest.
func (o *NeutronMetadataAgent) ResolvedImage() string {
	return o.Spec.Image.Reference()
}

// ResolvedMetadataWorkers is the agent's worker process count.
func (s *NeutronMetadataAgentSpec) ResolvedMetadataWorkers() int32 {
	if s.MetadataWorkers == nil {
		return DefaultMetadataWorkers
	}
	return *s.MetadataWorkers
}

// ResolvedPort is the metadata API's port.
func (n NovaMetadataSpec) ResolvedPort() int32 {
	if n.Port == nil {
		return DefaultNovaMetadataPort
	}
	return *n.Port
}

// ResolvedProtocol is the metadata API's protocol, http or https.
func (n NovaMetadataSpec) ResolvedProtocol() string {
	if n.Protocol == "" {
		return DefaultNovaMetadataProtocol
	}
	return n.Protocol
}

// ResolvedCABundleKey is the key of the CA bundle in its Secret; it is
// only meaningful while caBundleSecretRef is set.
func (n NovaMetadataSpec) ResolvedCABundleKey() string {
	return n.CABundleSecretRef.resolvedKey(DefaultCABundleKey)
}

// ResolvedSharedSecretKey is the key of the shared secret in its Secret;
// it is only meaningful while sharedSecretRef is set.
func (n NovaMetadataSpec) ResolvedSharedSecretKey() string {
	return n.SharedSecretRef.resolvedKey(DefaultSharedSecretKey)
}

// resolvedKey returns r's key, or def when r is nil or names no key.
func (r *SecretKeyRef) resolvedKey(def string) string {
	if r == nil || r.Key == "" {
		return def
	}
	return r.Key
}
