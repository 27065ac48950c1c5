package clusterreg

import (
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig returns the client configuration of one kubeconfig context.
// An empty kubeconfigPath follows client-go's loading rules ($KUBECONFIG,
// then ~/.kube/config); an empty context means the current context.
func RESTConfig(kubeconfigPath, context string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if kubeconfigPath != "" {
		rules.ExplicitPath = kubeconfigPath
	}
	overrides := &clientcmd.ConfigOverrides{CurrentContext: context}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides).ClientConfig()
	if err != nil {
		if context == "" {
			return nil, fmt.Errorf("the kubeconfig's current context: %w", err)
		}
		return nil, fmt.Errorf("kubeconfig context %s: %w", context, err)
	}
	return cfg, nil
}
