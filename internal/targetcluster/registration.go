package targetcluster

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// RegistrationLabel marks a Secret as the registration of a compute
	// cluster. Only the exact value "true" counts.
	RegistrationLabel = "sigs.k8s.io/multicluster-runtime-kubeconfig"

	// KubeconfigKey holds the kubeconfig of the compute cluster, with every
	// credential embedded.
	KubeconfigKey = "kubeconfig"

	// NamespacesKey optionally holds a comma-separated list of namespaces
	// that scopes what Anvil reads and writes on the compute cluster.
	NamespacesKey = "namespaces"
)

// BuildRegistrationSecret renders the registration Secret for a compute
// cluster. The Secret's name is the cluster name that targetClusterRef uses.
// An empty namespaces list leaves the key out, which means cluster-wide.
func BuildRegistrationSecret(clusterName, clustersNamespace string, kubeconfig []byte, namespaces string) *corev1.Secret {
	s := &corev1.Secret{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      clusterName,
			Namespace: clustersNamespace,
			Labels:    map[string]string{RegistrationLabel: "true"},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{KubeconfigKey: kubeconfig},
	}
	if namespaces != "" {
		s.Data[NamespacesKey] = []byte(namespaces)
	}
	return s
}
