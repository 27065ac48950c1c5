// Package keystonepolicy is where the operator lets a Nova send its service
// password. Every Keystone URL of a Nova is an auth_url: the pool
// controller authenticates there with the password the Nova's
// serviceUser.secretRef names, and the control plane's processes do too.
// Without a limit, whoever may write a Nova could name any Secret key of
// the namespace and any host, and the operator would post the value there.
// A Nova may therefore name only the Keystone its owning ControlPlane
// declares, or a host on the operator's --allowed-keystone-hosts. The Nova
// webhook, the Nova controller and the pool controller all ask this
// package. Check is pure.
package keystonepolicy

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

// Policy limits the Keystone hosts a Nova may name.
type Policy struct {
	// AllowedHosts are the hosts any Nova may name, beside its owning
	// ControlPlane's Keystone. An entry "host" admits that host on every
	// port; "host:port" admits that port only. Empty admits no other host,
	// so a Nova without a ControlPlane is refused until the operator is
	// told which Keystone it may use.
	AllowedHosts []string
}

// Check returns every Keystone URL of nova whose host the policy does not
// admit, by field. cp is the ControlPlane that controls nova, or nil; its
// declared Keystone is admitted on the ports its URLs name. Errors name
// the host, never the whole URL, which may carry a user name or password.
func (p Policy) Check(nova *novav1alpha1.Nova, cp *c5c3v1alpha1.ControlPlane) field.ErrorList {
	declared := DeclaredHosts(cp)
	var errs field.ErrorList
	for _, f := range endpoints(nova) {
		host, port, ok := hostPort(f.raw)
		switch {
		case !ok:
			errs = append(errs, field.Forbidden(f.path, "must be an http or https URL that names a host: a Nova sends its service password to this Keystone"))
		case !slices.Contains(declared, net.JoinHostPort(host, port)) && !p.allows(host, port):
			errs = append(errs, field.Forbidden(f.path, fmt.Sprintf(
				"host %s is not allowed: a Nova sends its service password to this Keystone, and this operator admits only %s",
				net.JoinHostPort(host, port), p.admitted(declared, cp != nil))))
		}
	}
	return errs
}

// CheckControlPlane returns every Keystone URL of cp that the policy does
// not admit, by field. A ControlPlane's Keystone is where Anvil posts the
// cloud's admin password (adminCredentialsSecretRef) and what every Nova it
// owns may then name, so only the operator's administrator admits one,
// through --allowed-keystone-hosts, and only over https unless the entry
// that admits it starts with http://. Errors name the host, never the URL.
func (p Policy) CheckControlPlane(cp *c5c3v1alpha1.ControlPlane) field.ErrorList {
	ks := cp.Spec.Services.Keystone
	if ks == nil {
		return nil
	}
	path := field.NewPath("spec", "services", "keystone")
	urls := []urlField{{path.Child("internalEndpoint"), ks.InternalEndpoint}}
	if ks.PublicEndpoint != "" {
		urls = append(urls, urlField{path.Child("publicEndpoint"), ks.PublicEndpoint})
	}
	if ks.Gateway != nil && ks.Gateway.Hostname != "" {
		urls = append(urls, urlField{path.Child("gateway", "hostname"), "https://" + ks.Gateway.Hostname})
	}
	var errs field.ErrorList
	for _, f := range urls {
		errs = append(errs, p.checkDeclared(f)...)
	}
	return errs
}

// checkDeclared checks one Keystone URL a ControlPlane declares.
func (p Policy) checkDeclared(f urlField) field.ErrorList {
	host, port, ok := hostPort(f.raw)
	if !ok {
		return field.ErrorList{field.Forbidden(f.path, "must be an https URL that names a host: Anvil sends the Keystone admin password there")}
	}
	hp := net.JoinHostPort(host, port)
	allowed, plain := p.allowsPlain(host, port)
	switch {
	case !allowed:
		return field.ErrorList{field.Forbidden(f.path, fmt.Sprintf(
			"host %s is not allowed: Anvil sends the Keystone admin password there, and this operator admits %s",
			hp, p.allowedList()))}
	case strings.HasPrefix(f.raw, "http:") && !plain:
		return field.ErrorList{field.Forbidden(f.path, fmt.Sprintf(
			"must use https: Anvil sends the Keystone admin password to %s; an --allowed-keystone-hosts entry written %s%s admits plain http there",
			hp, plainPrefix, hp))}
	}
	return nil
}

// allowedList describes the allowlist for an error message.
func (p Policy) allowedList() string {
	if len(p.AllowedHosts) == 0 {
		return "no host (its --allowed-keystone-hosts is empty)"
	}
	return "only the hosts of its --allowed-keystone-hosts (" + strings.Join(p.AllowedHosts, ", ") + ")"
}

// urlField is one Keystone URL of a Nova and the field that holds it.
type urlField struct {
	path *field.Path
	raw  string
}

// endpoints returns every Keystone URL a Nova's processes authenticate at
// or send clients to: the in-cluster one, the public one when set, and
// the remote contract's.
func endpoints(nova *novav1alpha1.Nova) []urlField {
	spec := field.NewPath("spec")
	out := []urlField{{spec.Child("keystoneEndpoint"), nova.Spec.KeystoneEndpoint}}
	if nova.Spec.KeystonePublicEndpoint != "" {
		out = append(out, urlField{spec.Child("keystonePublicEndpoint"), nova.Spec.KeystonePublicEndpoint})
	}
	if rc := nova.Spec.RemoteCompute; rc != nil {
		out = append(out, urlField{spec.Child("remoteCompute", "keystoneEndpoint"), rc.KeystoneEndpoint})
	}
	return out
}

// DeclaredHosts returns the host:port of every Keystone URL cp declares:
// the internal and public endpoints, and the gateway's hostname on 443,
// since the public URL is then https://<hostname>/v3. Nil cp declares none.
func DeclaredHosts(cp *c5c3v1alpha1.ControlPlane) []string {
	if cp == nil || cp.Spec.Services.Keystone == nil {
		return nil
	}
	ks := cp.Spec.Services.Keystone
	var out []string
	for _, raw := range []string{ks.InternalEndpoint, ks.PublicEndpoint} {
		if host, port, ok := hostPort(raw); ok {
			out = append(out, net.JoinHostPort(host, port))
		}
	}
	if ks.Gateway != nil && ks.Gateway.Hostname != "" {
		out = append(out, net.JoinHostPort(normalize(ks.Gateway.Hostname), "443"))
	}
	return out
}

// ValidateHosts reports an allowlist entry that is not a host or a
// host:port, such as a URL, so that a mistyped flag fails at start
// instead of refusing every Nova.
func ValidateHosts(entries []string) error {
	for _, e := range entries {
		host, port := splitEntry(e)
		if host == "" || strings.ContainsAny(host, "/@?#[] ") {
			return fmt.Errorf("%q is not a host or host:port", e)
		}
		if port != "" {
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("%q has no valid port", e)
			}
		}
	}
	return nil
}

// allows tells whether an allowlist entry admits host and port.
func (p Policy) allows(host, port string) bool {
	allowed, _ := p.allowsPlain(host, port)
	return allowed
}

// allowsPlain tells whether an allowlist entry admits host and port, and
// whether one that does is written with plainPrefix.
func (p Policy) allowsPlain(host, port string) (allowed, plain bool) {
	for _, e := range p.AllowedHosts {
		h, pt := splitEntry(e)
		if h == host && (pt == "" || pt == port) {
			allowed = true
			plain = plain || plainHTTP(e)
		}
	}
	return allowed, plain
}

// admitted describes what the policy admits, for an error message.
func (p Policy) admitted(declared []string, child bool) string {
	var parts []string
	switch {
	case len(declared) > 0:
		parts = append(parts, "the owning ControlPlane's Keystone ("+strings.Join(declared, ", ")+")")
	case child:
		parts = append(parts, "the owning ControlPlane's Keystone (it declares none)")
	default:
		parts = append(parts, "the Keystone of an owning ControlPlane (this Nova has none)")
	}
	if len(p.AllowedHosts) > 0 {
		parts = append(parts, "the hosts of its --allowed-keystone-hosts ("+strings.Join(p.AllowedHosts, ", ")+")")
	} else {
		parts = append(parts, "no other host (its --allowed-keystone-hosts is empty)")
	}
	return strings.Join(parts, " and ")
}

// hostPort returns the normalized host of an http or https URL and its
// port, the scheme's default when the URL names none.
func hostPort(raw string) (host, port string, ok bool) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", false
	}
	host = normalize(u.Hostname())
	if host == "" {
		return "", "", false
	}
	port = u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return host, port, true
}

// splitEntry splits an allowlist entry into its normalized host and its
// port, which is empty when the entry names none. A bare IPv6 address has
// no port; one with a port is written [addr]:port. An entry may start with
// http:// (see plainHTTP).
func splitEntry(e string) (host, port string) {
	e, _ = strings.CutPrefix(strings.TrimSpace(e), plainPrefix)
	if h, p, err := net.SplitHostPort(e); err == nil {
		return normalize(h), p
	}
	return normalize(strings.TrimSuffix(strings.TrimPrefix(e, "["), "]")), ""
}

// plainPrefix marks an allowlist entry that also admits plain http for a
// ControlPlane's Keystone: the administrator's own statement that the path
// to that host is trusted, such as an in-cluster Service or loopback.
const plainPrefix = "http://"

// EntryFor returns the --allowed-keystone-hosts entry that admits exactly
// the host and port of a Keystone URL over its scheme: host:port for https,
// http://host:port for plain http. It reports false for anything else.
func EntryFor(raw string) (string, bool) {
	host, port, ok := hostPort(raw)
	if !ok {
		return "", false
	}
	entry := net.JoinHostPort(host, port)
	if strings.HasPrefix(raw, "http:") {
		entry = plainPrefix + entry
	}
	return entry, true
}

// EntriesFor returns the entries that admit every URL of urls (EntryFor),
// each once, in order; a URL that names no host is an error that quotes it,
// so pass only URLs that carry no credential.
func EntriesFor(urls ...string) ([]string, error) {
	var out []string
	for _, raw := range urls {
		entry, ok := EntryFor(raw)
		if !ok {
			return nil, fmt.Errorf("the Keystone URL %q names no host", raw)
		}
		if !slices.Contains(out, entry) {
			out = append(out, entry)
		}
	}
	return out, nil
}

// plainHTTP tells whether an entry starts with plainPrefix.
func plainHTTP(e string) bool { return strings.HasPrefix(strings.TrimSpace(e), plainPrefix) }

// normalize makes two spellings of one DNS name compare equal: case does
// not matter in a host name, and a trailing dot names the same host.
func normalize(host string) string {
	return strings.TrimSuffix(strings.ToLower(host), ".")
}
