package controlplane

import (
	"bytes"
	"errors"
	"strings"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
)

// fragmentKey is the contract's key with the nova.conf fragment.
const fragmentKey = "nova-compute.conf"

// usernameLine starts every line of the fragment that names the user a
// client section authenticates as; the INI writer renders "key = value".
const usernameLine = "username = "

// PerCluster tells whether each compute cluster gets a user of its own.
func PerCluster(cp *c5c3v1alpha1.ControlPlane) bool {
	nova := cp.Spec.Services.Nova
	return nova != nil && nova.RemoteCompute != nil && nova.RemoteCompute.Credentials == c5c3v1alpha1.PerClusterCredentials
}

// ComputeUserName is the Keystone user of one compute cluster.
func ComputeUserName(cluster string) string { return c5c3v1alpha1.ComputeUserPrefix + cluster }

// ComputeCredentialsName is the Secret with one compute cluster's password.
func ComputeCredentialsName(cp *c5c3v1alpha1.ControlPlane, cluster string) string {
	return cp.Name + c5c3v1alpha1.ComputeCredentialsInfix + cluster
}

// ReissueToken returns the token of the ControlPlane's request to reissue
// cluster's credentials, or "" when the request names another cluster or
// there is none. The annotation reads "<cluster>@<token>".
func ReissueToken(cp *c5c3v1alpha1.ControlPlane, cluster string) string {
	name, token, ok := strings.Cut(cp.Annotations[c5c3v1alpha1.ReissueComputeCredentialsAnnotation], "@")
	if !ok || name != cluster {
		return ""
	}
	return token
}

// RenderForCluster turns the contract's data into one cluster's: every
// client section authenticates as user, and the password key holds that
// user's password. Nothing else changes, so two clusters' mirrors differ
// only in those values. It is pure; it refuses values that would break
// out of their line or that oslo.config would interpolate ($).
func RenderForCluster(data map[string][]byte, user, password string) (map[string][]byte, error) {
	if user == "" || password == "" || strings.ContainsFunc(user+password, isControl) || strings.Contains(user+password, "$") {
		return nil, errors.New("a per-cluster user name or password is empty or holds a control character or $")
	}
	lines := bytes.Split(data[fragmentKey], []byte("\n"))
	replaced := 0
	for i, line := range lines {
		if bytes.HasPrefix(line, []byte(usernameLine)) {
			lines[i] = []byte(usernameLine + user)
			replaced++
		}
	}
	if replaced == 0 {
		return nil, errors.New("the contract's fragment names no user to replace")
	}
	out := make(map[string][]byte, len(data))
	for k, v := range data {
		out[k] = append([]byte(nil), v...)
	}
	out[fragmentKey] = bytes.Join(lines, []byte("\n"))
	out[passwordKey] = []byte(password)
	return out, nil
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
