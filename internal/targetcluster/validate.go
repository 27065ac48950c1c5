package targetcluster

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// RefusalReason says why a registration Secret was refused. The values are
// metric labels and log fields, so they are fixed words that never carry any
// part of the Secret.
type RefusalReason string

// Why a registration can be refused.
const (
	RefusedMissingKubeconfig  RefusalReason = "MissingKubeconfig"
	RefusedInvalidKubeconfig  RefusalReason = "InvalidKubeconfig"
	RefusedInvalidNamespaces  RefusalReason = "InvalidNamespaces"
	RefusedExecCredential     RefusalReason = "ExecCredential"
	RefusedAuthProvider       RefusalReason = "AuthProvider"
	RefusedCredentialFile     RefusalReason = "CredentialFile"
	RefusedCertificateFile    RefusalReason = "CertificateAuthorityFile"
	RefusedCredentialInServer RefusalReason = "CredentialInServerURL"
	// RefusedInsecureTLS: a cluster entry skips server certificate checks,
	// so anyone on the path could receive the credentials Anvil writes.
	RefusedInsecureTLS RefusalReason = "InsecureSkipTLSVerify"
	// RefusedPlaintextServer: a server URL is not https, so the token and
	// every object written would travel in cleartext.
	RefusedPlaintextServer RefusalReason = "PlaintextServer"
	// RefusedProxy: a cluster entry routes the operator's traffic through
	// a proxy the registrant chose.
	RefusedProxy RefusalReason = "ProxyURL"
	// RefusedImpersonation: a user entry acts as someone else, so the
	// rights Anvil works with are not those of the registered identity.
	RefusedImpersonation RefusalReason = "Impersonation"
	// RefusedClusterWide: the Secret names no namespaces, so the operator
	// would cache and may write every namespace of the cluster, and the
	// operator was not started to allow that.
	RefusedClusterWide RefusalReason = "ClusterWide"
)

// RefusalError is returned for a registration Anvil will not use. Its
// message names the offending entry by its kubeconfig name, never a value.
type RefusalError struct {
	Reason RefusalReason
	Detail string
}

func (e *RefusalError) Error() string { return fmt.Sprintf("%s: %s", e.Reason, e.Detail) }

func refuse(reason RefusalReason, format string, args ...any) error {
	return &RefusalError{Reason: reason, Detail: fmt.Sprintf(format, args...)}
}

// Registration is a validated registration Secret.
type Registration struct {
	// Kubeconfig is the decoded kubeconfig.
	Kubeconfig *clientcmdapi.Config
	// Namespaces scopes the cluster's cache; nil means cluster-wide.
	Namespaces []string
	// Hash identifies the content; the cluster is rebuilt only when it
	// changes.
	Hash string
	// Endpoint is the EndpointFingerprint of the current context's server
	// and CA: where the credentials Anvil writes would go.
	Endpoint string
}

// ParseRegistration validates a registration Secret's data and returns what
// the registry needs. It reports the first problem it finds as a
// *RefusalError.
func ParseRegistration(secret *corev1.Secret) (*Registration, error) {
	raw := secret.Data[KubeconfigKey]
	if len(raw) == 0 {
		return nil, refuse(RefusedMissingKubeconfig, "the Secret has no non-empty %q key", KubeconfigKey)
	}
	var namespaces []string
	rawNamespaces, scoped := secret.Data[NamespacesKey]
	if scoped {
		var err error
		if namespaces, err = ParseNamespaces(string(rawNamespaces)); err != nil {
			return nil, err
		}
	}
	kc, err := clientcmd.Load(raw)
	if err != nil {
		// The decoder's message can quote the input; report only that it failed.
		return nil, refuse(RefusedInvalidKubeconfig, "the %q key is not a kubeconfig", KubeconfigKey)
	}
	if err := CheckKubeconfig(kc); err != nil {
		return nil, err
	}
	current := kc.Clusters[kc.Contexts[kc.CurrentContext].Cluster]
	return &Registration{
		Kubeconfig: kc, Namespaces: namespaces, Hash: registrationHash(raw, rawNamespaces, scoped),
		Endpoint: EndpointFingerprint(current.Server, current.CertificateAuthorityData),
	}, nil
}

// CheckRegistrationScope refuses a registration that names no namespaces
// unless the operator allows cluster-wide registrations. A cluster-wide
// cache holds every Secret and Node of the cluster, which one compute
// cluster can grow without bound, and a cluster-wide scope lets a
// management namespace place children in any namespace there; so it is
// the operator's choice, not the registrant's.
func CheckRegistrationScope(reg *Registration, allowClusterWide bool) error {
	if len(reg.Namespaces) > 0 || allowClusterWide {
		return nil
	}
	return refuse(RefusedClusterWide, "the Secret has no %q key, and this operator engages only registrations scoped to namespaces "+
		"(its flag --allow-cluster-wide-registrations is off)", NamespacesKey)
}

// registrationHash is SHA-256 over the kubeconfig, plus a NUL and the raw
// namespaces when that key exists, so that adding an empty scope, changing
// the scope or rotating the token each count as a change.
func registrationHash(kubeconfig, namespaces []byte, scoped bool) string {
	h := sha256.New()
	h.Write(kubeconfig)
	if scoped {
		h.Write([]byte{0})
		h.Write(namespaces)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ParseNamespaces splits the comma-separated namespaces value. Entries are
// trimmed; each must be a DNS-1123 label, and at least one must be given.
func ParseNamespaces(value string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for i, part := range strings.Split(value, ",") {
		ns := strings.TrimSpace(part)
		if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
			return nil, refuse(RefusedInvalidNamespaces, "entry %d of %q is not a DNS-1123 label", i+1, NamespacesKey)
		}
		if !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out, nil
}

// CheckKubeconfig refuses credentials the operator cannot or must not use:
// plugins that run commands, anything read from a file, which would be a
// file on the operator's machine rather than the registrant's, and any
// weakening of the transport (no TLS, unchecked TLS, a proxy) or of the
// identity (impersonation). The registrant's token guards only their
// cluster, but what Anvil sends over it guards the cloud. Every entry
// counts, not only the current context's.
func CheckKubeconfig(kc *clientcmdapi.Config) error {
	if len(kc.Contexts) == 0 || kc.Contexts[kc.CurrentContext] == nil {
		return refuse(RefusedInvalidKubeconfig, "the kubeconfig has no current context")
	}
	for _, name := range slices.Sorted(maps.Keys(kc.AuthInfos)) {
		u := kc.AuthInfos[name]
		switch {
		case u.Exec != nil:
			return refuse(RefusedExecCredential, "user %q runs an exec credential plugin", name)
		case u.AuthProvider != nil:
			return refuse(RefusedAuthProvider, "user %q uses an auth-provider plugin", name)
		case u.TokenFile != "":
			return refuse(RefusedCredentialFile, "user %q reads its token from a file", name)
		case u.ClientCertificate != "" || u.ClientKey != "":
			return refuse(RefusedCredentialFile, "user %q reads its client certificate or key from a file", name)
		case u.Impersonate != "" || u.ImpersonateUID != "" || len(u.ImpersonateGroups) > 0 || len(u.ImpersonateUserExtra) > 0:
			return refuse(RefusedImpersonation, "user %q impersonates another identity", name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(kc.Clusters)) {
		c := kc.Clusters[name]
		if c.CertificateAuthority != "" {
			return refuse(RefusedCertificateFile, "cluster %q reads its certificate authority from a file", name)
		}
		if c.InsecureSkipTLSVerify {
			return refuse(RefusedInsecureTLS, "cluster %q sets insecure-skip-tls-verify", name)
		}
		if c.ProxyURL != "" {
			return refuse(RefusedProxy, "cluster %q sets proxy-url", name)
		}
		u, err := url.Parse(c.Server)
		if err != nil || u.Host == "" {
			return refuse(RefusedInvalidKubeconfig, "cluster %q has no valid server URL", name)
		}
		if u.User != nil {
			return refuse(RefusedCredentialInServer, "cluster %q carries credentials in its server URL", name)
		}
		if u.Scheme != "https" {
			return refuse(RefusedPlaintextServer, "cluster %q has a server URL whose scheme is not https", name)
		}
	}
	ctx := kc.Contexts[kc.CurrentContext]
	if kc.Clusters[ctx.Cluster] == nil || kc.AuthInfos[ctx.AuthInfo] == nil {
		return refuse(RefusedInvalidKubeconfig, "the current context names a missing cluster or user")
	}
	return nil
}

// IsRefusal tells whether err is a *RefusalError and returns it.
func IsRefusal(err error) (*RefusalError, bool) {
	var r *RefusalError
	ok := errors.As(err, &r)
	return r, ok
}
