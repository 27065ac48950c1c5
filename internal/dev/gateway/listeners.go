package gateway

import (
	"crypto/tls"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// httpRouteKind is the only route kind this implementation serves.
var httpRouteKind = gatewayv1.RouteGroupKind{Group: groupPtr(gatewayv1.GroupName), Kind: "HTTPRoute"}

func groupPtr(g string) *gatewayv1.Group { v := gatewayv1.Group(g); return &v }

// secretLookup returns a Secret of the cache, or nil when it does not exist.
type secretLookup func(types.NamespacedName) *corev1.Secret

// listenerState is what the controller decided about one listener of a
// claimed Gateway, and what the data plane needs to serve it.
type listenerState struct {
	gateway  *gatewayv1.Gateway
	spec     *gatewayv1.Listener
	hostname string
	hostPort int32
	// kinds are the route kinds the listener admits and this
	// implementation supports; they become status.supportedKinds.
	kinds    []gatewayv1.RouteGroupKind
	accepted verdict
	resolved verdict
	// conflict holds when the listener does not conflict with another on
	// the same host port.
	conflict verdict
	// bindErr is the data plane's failure to listen on hostPort.
	bindErr error
	// cert is the serving certificate of an HTTPS listener.
	cert *tls.Certificate
	// attached counts the routes accepted on the listener.
	attached int32
}

// attachable tells whether routes can attach to the listener: it speaks a
// supported protocol and does not conflict with another listener.
func (l *listenerState) attachable() bool { return l.accepted.ok && l.conflict.ok }

// programmed tells whether the data plane serves the listener.
func (l *listenerState) programmed() bool {
	return l.attachable() && l.resolved.ok && l.bindErr == nil
}

// checkListener decides a listener's Accepted and ResolvedRefs verdicts and
// supported kinds, and loads the certificate of an HTTPS listener.
func checkListener(l *listenerState, secrets secretLookup) {
	l.accepted = pass(string(gatewayv1.ListenerReasonAccepted), "The listener is served by the dev gateway.")
	l.resolved = pass(string(gatewayv1.ListenerReasonResolvedRefs), "All references are resolved.")
	l.conflict = pass(string(gatewayv1.ListenerReasonNoConflicts), "No conflicts.")
	if l.spec.Hostname != nil {
		l.hostname = normalizeHost(string(*l.spec.Hostname))
	}
	switch l.spec.Protocol {
	case gatewayv1.HTTPProtocolType, gatewayv1.HTTPSProtocolType:
	default:
		l.accepted = fail(string(gatewayv1.ListenerReasonUnsupportedProtocol),
			fmt.Sprintf("Protocol %s is not supported; the dev gateway serves HTTP and HTTPS.", l.spec.Protocol))
		return
	}
	l.kinds, l.resolved = routeKinds(l.spec.AllowedRoutes)
	if l.spec.Protocol != gatewayv1.HTTPSProtocolType {
		return
	}
	if tlsCfg := l.spec.TLS; tlsCfg != nil && tlsCfg.Mode != nil && *tlsCfg.Mode != gatewayv1.TLSModeTerminate {
		l.accepted = fail(string(gatewayv1.ListenerReasonUnsupportedValue), "Only TLS mode Terminate is supported.")
		return
	}
	cert, v := loadCertificate(l.gateway.Namespace, l.spec.TLS, secrets)
	l.cert = cert
	if !v.ok {
		l.resolved = v
	}
}

// routeKinds returns the supported subset of the kinds a listener admits,
// and a failed verdict when it names a kind this implementation lacks.
func routeKinds(allowed *gatewayv1.AllowedRoutes) ([]gatewayv1.RouteGroupKind, verdict) {
	ok := pass(string(gatewayv1.ListenerReasonResolvedRefs), "All references are resolved.")
	if allowed == nil || len(allowed.Kinds) == 0 {
		return []gatewayv1.RouteGroupKind{httpRouteKind}, ok
	}
	var kinds []gatewayv1.RouteGroupKind
	var bad []string
	for _, k := range allowed.Kinds {
		if (k.Group == nil || string(*k.Group) == gatewayv1.GroupName) && k.Kind == httpRouteKind.Kind {
			kinds = append(kinds, httpRouteKind)
			continue
		}
		group := ""
		if k.Group != nil {
			group = string(*k.Group)
		}
		bad = append(bad, fmt.Sprintf("%s/%s", group, k.Kind))
	}
	if len(bad) > 0 {
		return kinds, fail(string(gatewayv1.ListenerReasonInvalidRouteKinds),
			"Unsupported route kinds: "+strings.Join(bad, ", ")+"; only HTTPRoute is supported.")
	}
	return kinds, ok
}

// loadCertificate loads every certificateRef of an HTTPS listener and
// returns the first, which the listener serves. Any unusable reference fails
// the listener's ResolvedRefs.
func loadCertificate(namespace string, cfg *gatewayv1.ListenerTLSConfig, secrets secretLookup) (*tls.Certificate, verdict) {
	invalid := string(gatewayv1.ListenerReasonInvalidCertificateRef)
	if cfg == nil || len(cfg.CertificateRefs) == 0 {
		return nil, fail(invalid, "An HTTPS listener needs tls.certificateRefs.")
	}
	var first *tls.Certificate
	for _, ref := range cfg.CertificateRefs {
		if (ref.Group != nil && *ref.Group != "") || (ref.Kind != nil && *ref.Kind != "Secret") {
			return nil, fail(invalid, fmt.Sprintf("Certificate reference %s: only core Secrets are supported.", ref.Name))
		}
		if ref.Namespace != nil && string(*ref.Namespace) != namespace {
			return nil, fail(string(gatewayv1.ListenerReasonRefNotPermitted),
				fmt.Sprintf("Secret %s/%s is in another namespace; the dev gateway does not implement ReferenceGrant.", *ref.Namespace, ref.Name))
		}
		secret := secrets(types.NamespacedName{Namespace: namespace, Name: string(ref.Name)})
		if secret == nil {
			return nil, fail(invalid, fmt.Sprintf("Secret %s/%s does not exist or is not of type %s.", namespace, ref.Name, corev1.SecretTypeTLS))
		}
		crt, key := secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey]
		if len(crt) == 0 || len(key) == 0 {
			return nil, fail(invalid, fmt.Sprintf("Secret %s/%s lacks %s or %s.", namespace, ref.Name, corev1.TLSCertKey, corev1.TLSPrivateKeyKey))
		}
		pair, err := tls.X509KeyPair(crt, key)
		if err != nil {
			return nil, fail(invalid, fmt.Sprintf("Secret %s/%s holds no usable key pair: %v.", namespace, ref.Name, err))
		}
		if first == nil {
			first = &pair
		}
	}
	return first, pass(string(gatewayv1.ListenerReasonResolvedRefs), "All references are resolved.")
}

// markConflicts finds listeners that cannot share their host port: all
// listeners of every claimed Gateway share one address, so two Gateways can
// conflict as well as two listeners of one. The first listener in the given
// order (oldest Gateway first) keeps the port; a later one with another
// protocol, or with the same protocol and hostname, is Conflicted.
func markConflicts(listeners []*listenerState) {
	type portUse struct {
		protocol  gatewayv1.ProtocolType
		hostnames map[string]string
	}
	ports := map[int32]*portUse{}
	for _, l := range listeners {
		if !l.accepted.ok {
			continue
		}
		owner := l.gateway.Namespace + "/" + l.gateway.Name + "/" + string(l.spec.Name)
		use := ports[l.hostPort]
		if use == nil {
			ports[l.hostPort] = &portUse{protocol: l.spec.Protocol, hostnames: map[string]string{l.hostname: owner}}
			continue
		}
		if use.protocol != l.spec.Protocol {
			l.conflict = fail(string(gatewayv1.ListenerReasonProtocolConflict),
				fmt.Sprintf("Host port %d already serves %s.", l.hostPort, use.protocol))
			continue
		}
		if other, taken := use.hostnames[l.hostname]; taken {
			l.conflict = fail(string(gatewayv1.ListenerReasonHostnameConflict),
				fmt.Sprintf("Listener %s already serves hostname %q on host port %d.", other, l.hostname, l.hostPort))
			continue
		}
		use.hostnames[l.hostname] = owner
	}
}
