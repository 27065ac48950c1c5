package perf

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	c5c3v1alpha1 "github.com/anvil/anvil/api/c5c3/v1alpha1"
	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
	"github.com/anvil/anvil/internal/novaconfig"
)

// InputPath is one way a user's change reaches the contract every mirror
// carries. P1 measures each of them against the same-run direct write.
type InputPath struct {
	// Name is how the report names the path.
	Name string
	// change makes the i-th change of the ControlPlane cp and returns what
	// the mirrors hold once they carry it.
	change func(ctx context.Context, s *Stack, cp string, i int) (want, error)
}

// InputPaths are the paths P1 measures, in the order it measures them.
var InputPaths = []InputPath{
	{Name: "service password Secret", change: changeServicePassword},
	{Name: "ControlPlane spec (services.nova.consoleProxy.hostname)", change: changeConsoleHostname},
	{Name: "Nova spec (logging.debug)", change: changeNovaDebug},
	{Name: "remote bus Secret", change: changeRemoteBus},
}

// changeServicePassword writes a new service password, a Secret the
// contract reads.
func changeServicePassword(ctx context.Context, s *Stack, cp string, i int) (want, error) {
	value := fmt.Sprintf("%s-password-%d", cp, i)
	err := s.PutSecret(ctx, "mgmt", Namespace, cp+"-nova-password", map[string]string{"password": value})
	return equal(novaconfig.KeyPassword, value), err
}

// changeConsoleHostname moves the console proxy's published hostname, a
// ControlPlane spec field the contract carries as novncproxy_base_url.
// The Nova rolls its Deployments for it, as it would for a user.
func changeConsoleHostname(ctx context.Context, s *Stack, cp string, i int) (want, error) {
	host := fmt.Sprintf("console-%s-%d.bench.invalid", cp, i)
	patch := fmt.Sprintf(`{"spec":{"services":{"nova":{"consoleProxy":{"enabled":true,"hostname":%q}}}}}`, host)
	obj := &c5c3v1alpha1.ControlPlane{}
	obj.Name, obj.Namespace = cp, Namespace
	err := s.Env.Management.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
	return inConfig("//" + host + "/"), err
}

// changeNovaDebug turns the Nova's debug logging on and off, a Nova spec
// field the ControlPlane does not set, so a user may, and the contract
// carries.
func changeNovaDebug(ctx context.Context, s *Stack, cp string, i int) (want, error) {
	debug := i%2 == 0
	obj := &novav1alpha1.Nova{}
	obj.Name, obj.Namespace = cp+c5c3v1alpha1.NovaSuffix, Namespace
	patch := fmt.Sprintf(`{"spec":{"logging":{"debug":%t}}}`, debug)
	err := s.Env.Management.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, []byte(patch)))
	return inConfig(fmt.Sprintf("debug = %t\n", debug)), err
}

// changeRemoteBus hands over a new URL of the broker's external listener,
// the Secret remoteCompute names.
func changeRemoteBus(ctx context.Context, s *Stack, cp string, i int) (want, error) {
	value := fmt.Sprintf("rabbit://nova:bench-remote-%d@rabbit.bench.invalid:5671/nova", i)
	err := s.PutSecret(ctx, "mgmt", Namespace, cp+"-remote-transport", map[string]string{"transport_url": value})
	return equal(novaconfig.KeyTransportURL, value), err
}
