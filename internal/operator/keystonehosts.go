package operator

import (
	"flag"
	"fmt"

	"github.com/anvil/anvil/internal/keystonepolicy"
)

// bindKeystoneHostsFlag registers --allowed-keystone-hosts. It lives
// apart from BindFlags so that the Keystone policy's wiring stays in one
// place.
func (o *Options) bindKeystoneHostsFlag(fs *flag.FlagSet) {
	fs.Func("allowed-keystone-hosts",
		"Comma-separated Keystone hosts (host or host:port) a Nova may name besides its owning ControlPlane's Keystone; "+
			"a Nova sends its service password there (default none: only ControlPlane children).",
		func(v string) error {
			o.AllowedKeystoneHosts = splitList(v)
			return nil
		})
}

// validateKeystoneHosts reports an entry of --allowed-keystone-hosts that
// is not a host or host:port, naming the flag.
func (o *Options) validateKeystoneHosts() error {
	if err := keystonepolicy.ValidateHosts(o.AllowedKeystoneHosts); err != nil {
		return fmt.Errorf("--allowed-keystone-hosts: %w", err)
	}
	return nil
}

// KeystonePolicy is where a Nova may send its service password, for the
// Nova webhook and the Nova and pool controllers alike.
func (o *Options) KeystonePolicy() keystonepolicy.Policy {
	return keystonepolicy.Policy{AllowedHosts: o.AllowedKeystoneHosts}
}
