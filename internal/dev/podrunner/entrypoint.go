package podrunner

import (
	"errors"
	"fmt"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// ServiceAccountMountPath is where the apiserver's ServiceAccount admission
// mounts a pod's token, the cluster's CA and its namespace.
const ServiceAccountMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"

// Entrypoint runs the containers of one image as a local binary built from
// the same source as the image's entrypoint: the devstack runs the
// operator's Deployment this way, so the operator runs with exactly the
// arguments, mounts and service account its chart gives it.
type Entrypoint struct {
	// Repository is the image repository whose containers match, whatever
	// their tag or digest.
	Repository string
	// Binary is the local program that stands in for the entrypoint.
	Binary string
	// Server and CAData reach the cluster the pod runs on. A pod that
	// mounts its service account token gets a kubeconfig with them and the
	// token's file, in KUBECONFIG, since this host cannot reach the
	// in-cluster address the pod would otherwise use.
	Server string
	CAData []byte
	// LogCopy, if set, receives the program's output as well as the
	// container log, and outlives the pod, so a replaced pod's log is kept.
	LogCopy string
}

// EntrypointMapping returns the Mapping that runs e.
func EntrypointMapping(e Entrypoint) Mapping {
	return Mapping{
		Name:  "entrypoint " + e.Repository,
		Match: MatchImage(e.Repository),
		Build: e.command,
	}
}

// command builds the Command of one container: the binary with the
// container's args, $(VAR)s expanded and mount paths translated.
func (e Entrypoint) command(c Container) (Command, error) {
	if len(c.Spec.Command) > 0 {
		// The binary stands in for the entrypoint only; a command that
		// replaces it could be anything.
		return Command{}, fmt.Errorf("container %s replaces the entrypoint of %s, which the runner cannot run", c.Spec.Name, e.Repository)
	}
	args := ExpandArgs(c.Spec, c.Env)
	for i := range args {
		args[i] = c.Mounts.Translate(args[i])
	}
	cmd := Command{Path: e.Binary, Args: args, LogCopy: e.LogCopy}
	tokenFile, ok := c.Mounts.Path(ServiceAccountMountPath + "/token")
	if !ok || e.Server == "" {
		return cmd, nil
	}
	raw, err := serviceAccountKubeconfig(e.Server, e.CAData, tokenFile, c.Pod.Namespace)
	if err != nil {
		return Command{}, err
	}
	path := filepath.Join(c.WorkDir, "kubeconfig")
	cmd.Files = map[string][]byte{path: raw}
	cmd.Env = map[string]string{"KUBECONFIG": path}
	return cmd, nil
}

// serviceAccountKubeconfig is a kubeconfig that authenticates with the
// token in tokenFile. It names the file rather than holding the token, so
// the kubeconfig carries no credential and client-go rereads the file.
func serviceAccountKubeconfig(server string, caData []byte, tokenFile, namespace string) ([]byte, error) {
	if len(caData) == 0 {
		return nil, errors.New("no CA for the cluster's apiserver")
	}
	const name = "in-cluster"
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[name] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{TokenFile: tokenFile}
	cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = name
	return clientcmd.Write(*cfg)
}
