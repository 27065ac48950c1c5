// Package gateway is a small Gateway API implementation for the devstack and
// the integration tests, where no real gateway (Envoy and friends) can run.
//
// It has two halves that run in one process:
//
//   - a controller that claims the GatewayClasses whose spec.controllerName
//     is its own, and writes the status of those classes, of their Gateways
//     and of the HTTPRoutes attached to them, the way a conformant
//     implementation would;
//   - a data plane that serves every programmed listener on a local address
//     (HTTP, or HTTPS terminated with the listener's certificate Secret),
//     routes requests by Host, path, method, headers and query parameters,
//     and proxies them to the ready EndpointSlice addresses of the backend
//     Service.
//
// Only the core of HTTPRoute is implemented. Filters, cross-namespace
// references (ReferenceGrant), TLS passthrough and the non-HTTP route kinds
// are reported as unsupported in the status instead of being ignored.
//
// CRDs and InstallCRDs install the standard-channel CRDs of the
// sigs.k8s.io/gateway-api module into an apiserver.
package gateway
