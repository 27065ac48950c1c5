// Package kubeconfig writes and reads the kubeconfigs Anvil hands around:
// registration kubeconfigs with every credential embedded, and merged
// multi-context files for the devstack.
package kubeconfig

import (
	"errors"
	"fmt"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Embedded renders a single-context kubeconfig for cfg in which the CA, the
// client certificate, the key and the token are all inline. A registration
// Secret must not name files: the operator reading it runs elsewhere.
func Embedded(name string, cfg *rest.Config) ([]byte, error) {
	if cfg.CAFile != "" || cfg.CertFile != "" || cfg.KeyFile != "" || cfg.BearerTokenFile != "" {
		return nil, errors.New("the rest config names credential files; load them into memory first")
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters[name] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
	}
	kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	kc.CurrentContext = name
	return clientcmd.Write(*kc)
}

// Flatten loads a kubeconfig file, reads every file it names into inline
// data, and returns the result. Tools like kwokctl write kubeconfigs that
// point at certificate files; a registration Secret needs them inline.
func Flatten(path string) (*clientcmdapi.Config, error) {
	kc, err := clientcmd.LoadFromFile(path)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	if err := clientcmdapi.FlattenConfig(kc); err != nil {
		return nil, fmt.Errorf("inlining the files kubeconfig %s names: %w", path, err)
	}
	return kc, nil
}

// Entry is one context to put into a merged kubeconfig.
type Entry struct {
	// Context is the name the context gets in the merged file.
	Context string
	// Config is a kubeconfig whose current context is taken.
	Config *clientcmdapi.Config
}

// Merge builds one kubeconfig holding the current context of each entry
// under its new name. Cluster and user entries are renamed after the context,
// so entries from different sources never collide. The first entry becomes
// the current context.
func Merge(entries []Entry) (*clientcmdapi.Config, error) {
	out := clientcmdapi.NewConfig()
	for i, e := range entries {
		ctx, ok := e.Config.Contexts[e.Config.CurrentContext]
		if !ok {
			return nil, fmt.Errorf("kubeconfig for %s has no current context", e.Context)
		}
		cluster, ok := e.Config.Clusters[ctx.Cluster]
		if !ok {
			return nil, fmt.Errorf("kubeconfig for %s names a missing cluster", e.Context)
		}
		user, ok := e.Config.AuthInfos[ctx.AuthInfo]
		if !ok {
			return nil, fmt.Errorf("kubeconfig for %s names a missing user", e.Context)
		}
		out.Clusters[e.Context] = cluster.DeepCopy()
		out.AuthInfos[e.Context] = user.DeepCopy()
		out.Contexts[e.Context] = &clientcmdapi.Context{Cluster: e.Context, AuthInfo: e.Context, Namespace: ctx.Namespace}
		if i == 0 {
			out.CurrentContext = e.Context
		}
	}
	return out, nil
}

// Single extracts one context of a kubeconfig as a file of its own, for
// programs that cannot be told which context to use.
func Single(kc *clientcmdapi.Config, context string) (*clientcmdapi.Config, error) {
	ctx, ok := kc.Contexts[context]
	if !ok {
		return nil, fmt.Errorf("kubeconfig has no context %q", context)
	}
	out := clientcmdapi.NewConfig()
	out.Clusters[ctx.Cluster] = kc.Clusters[ctx.Cluster]
	out.AuthInfos[ctx.AuthInfo] = kc.AuthInfos[ctx.AuthInfo]
	out.Contexts[context] = ctx
	out.CurrentContext = context
	return out, nil
}
