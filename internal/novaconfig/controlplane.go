package novaconfig

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Keys of the control plane's config Secret, {nova}-config, and the path
// its Deployments (api, metadata, scheduler, conductor, novncproxy) and
// database Jobs mount it at.
const (
	// KeyControlPlaneConfig holds nova.conf. oslo.config reads only the
	// *.conf files of a config directory, so the name must end in .conf.
	KeyControlPlaneConfig = "nova.conf"
	// KeyControlPlaneCABundle holds the broker's CA bundle; present only
	// under TLS. Not ending in .conf, it is never parsed as configuration.
	KeyControlPlaneCABundle = "ca.crt"
	// ControlPlaneMountPath is the directory the services and Jobs read as
	// their config directory; oslo.config also finds it by default for
	// project nova.
	// nova.conf's ssl_ca_file points into it, so another path leaves the CA
	// unreadable.
	ControlPlaneMountPath = "/etc/nova/nova.conf.d"
)

// Fixed paths and ports of the control plane image and pods.
const (
	controlPlaneCAFile = ControlPlaneMountPath + "/" + KeyControlPlaneCABundle
	apiPasteConfig     = "/etc/nova/api-paste.ini"
	// lockPath is Nova's state directory rather than the config mount,
	// because a Secret volume is read-only.
	lockPath = "/var/lib/nova/tmp"
	// noVNCProxyPort is the port the novncproxy Service targets.
	noVNCProxyPort = 6080
	// cacheBackend is oslo.cache's in-process dictionary: it needs no
	// memcached, which the control plane does not run, and it is what Nova
	// itself falls back to when [cache] is off. dogpile.cache.memory would
	// work too but comes from dogpile rather than oslo.cache.
	cacheBackend = "oslo_cache.dict"
)

// ControlPlaneInput is everything the control plane's nova.conf is made
// of. It embeds the ContractInput the compute contract is rendered from, so
// the two files share their inputs and the rules that check them; CellName
// is required by those rules although nova.conf does not carry it.
type ControlPlaneInput struct {
	ContractInput
	// APIDatabase is [api_database], Nova's API database (nova_api).
	APIDatabase Database
	// Database is [database], the cell's database (nova).
	Database Database
}

// RenderControlPlane returns the data of the Secret {nova}-config: key
// nova.conf, and ca.crt while the bus uses TLS. nova.conf is the in-cluster
// compute contract's fragment plus what only the control plane may hold:
// the passwords, the transport URL, the database URLs, the metadata
// secret and the sections of the API, the cache and the locks. Building
// it from the contract keeps the shared sections from drifting apart.
//
// Errors name an input field or a section, never a value. On any error it
// returns no data, so the caller keeps the Secret it wrote last.
func RenderControlPlane(in ControlPlaneInput) (map[string][]byte, error) {
	v := controlPlaneView(in)
	if err := checkRequired(in.ContractInput, v); err != nil {
		return nil, err
	}
	if err := checkControlPlaneDatabases(in); err != nil {
		return nil, err
	}
	file, err := controlPlaneFile(in, v)
	if err != nil {
		return nil, err
	}
	// The database credentials are checked raw as well: the URL escapes a
	// newline to %0A, which would hide a broken hand-over from the user.
	all := append(append([]Section(nil), file.Sections...), databaseSections(in)...)
	if name, ok := firstUnsafeSection(all); ok {
		return nil, &UnsafeValueError{Section: name}
	}
	if err := CheckTransportURL(in.TransportURL); err != nil {
		return nil, fmt.Errorf("%s: %w", v.transportInput, err)
	}
	conf, err := file.Render()
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{KeyControlPlaneConfig: conf}
	if tlsEnabled(in.ContractInput) {
		// Copied so a later change to the caller's slice cannot alter data
		// that has already been hashed.
		data[KeyControlPlaneCABundle] = append([]byte(nil), in.CABundle...)
	}
	return data, nil
}

// controlPlaneView is the in-cluster view of the contract: the control
// plane runs next to Keystone and the catalog's internal endpoints.
func controlPlaneView(in ControlPlaneInput) view {
	return view{
		authURL:        in.KeystoneEndpoint,
		iface:          "internal",
		cinderURL:      "internalURL",
		pinEndpoints:   true,
		transportURL:   in.TransportURL,
		authInput:      "ContractInput.KeystoneEndpoint",
		transportInput: "ContractInput.TransportURL",
	}
}

// checkControlPlaneDatabases names the first empty or out-of-range field
// of the two databases. Both are required: the API and the conductor
// cannot start without either.
func checkControlPlaneDatabases(in ControlPlaneInput) error {
	for _, d := range []struct {
		input string
		db    Database
	}{{"ControlPlaneInput.APIDatabase", in.APIDatabase}, {"ControlPlaneInput.Database", in.Database}} {
		for _, f := range []struct{ name, value string }{
			{"Host", d.db.Host}, {"Database", d.db.Database}, {"Username", d.db.Username}, {"Password", d.db.Password},
		} {
			if f.value == "" {
				return &MissingInputError{Input: d.input + "." + f.name}
			}
		}
		if d.db.Port < 1 || d.db.Port > 65535 {
			return fmt.Errorf("control plane config input %s.Port is %d, not in 1-65535", d.input, d.db.Port)
		}
	}
	return nil
}

// databaseSections lists the raw database inputs by the section that
// consumes them, only to be checked for control characters.
func databaseSections(in ControlPlaneInput) []Section {
	raw := func(name string, db Database) Section {
		return Section{name, []Option{
			{"host", db.Host}, {"database", db.Database}, {"username", db.Username}, {"password", db.Password},
		}}
	}
	return []Section{raw("api_database", in.APIDatabase), raw("database", in.Database)}
}

// controlPlaneFile takes the contract's fragment section by section,
// appends the control plane's own options to the shared sections, points
// ssl_ca_file at this Secret's mount and inserts the control plane's own
// sections after the shared section they follow.
func controlPlaneFile(in ControlPlaneInput, v view) (File, error) {
	extra := controlPlaneOptions(in)
	follow := controlPlaneSections(in)
	var out []Section
	for _, s := range fragment(in.ContractInput, v).Sections {
		opts := join(s.Options, extra[s.Name])
		if s.Name == "oslo_messaging_rabbit" {
			opts = withValue(opts, "ssl_ca_file", controlPlaneCAFile)
		}
		out = append(out, Section{s.Name, opts})
		out = append(out, follow[s.Name]...)
		delete(extra, s.Name)
		delete(follow, s.Name)
	}
	// A section the contract no longer writes would silently drop the
	// options meant for it; this is a programming error, caught by tests.
	if len(extra) > 0 {
		return File{}, fmt.Errorf("control plane config: the contract has no section %v to extend", slices.Sorted(maps.Keys(extra)))
	}
	if len(follow) > 0 {
		return File{}, fmt.Errorf("control plane config: the contract has no section %v to follow", slices.Sorted(maps.Keys(follow)))
	}
	return File{Sections: out}, nil
}

// controlPlaneOptions are the options appended to the contract's sections,
// keyed by section. They are what a compute must not see: credentials and
// the settings of the metadata API and the console proxy.
func controlPlaneOptions(in ControlPlaneInput) map[string][]Option {
	password := Option{"password", in.Password}
	extra := map[string][]Option{
		"DEFAULT": {{"transport_url", in.TransportURL}},
		// The API validates users' tokens and accepts service tokens only
		// from callers holding the service role. No memcached_servers:
		// without memcached the middleware caches tokens in process.
		"keystone_authtoken": {password, {"service_token_roles_required", "true"}},
		"service_user":       {password},
		"placement":          {password},
		"neutron": {
			password,
			{"service_metadata_proxy", "true"},
			{"metadata_proxy_shared_secret", in.MetadataSharedSecret},
		},
	}
	if in.ConsoleProxyEnabled {
		extra["vnc"] = []Option{{"novncproxy_host", "0.0.0.0"}, {"novncproxy_port", strconv.Itoa(noVNCProxyPort)}}
	}
	if in.Cinder.Enabled {
		extra["cinder"] = []Option{password}
	}
	return extra
}

// controlPlaneSections are the sections only the control plane has, keyed
// by the contract section they follow.
func controlPlaneSections(in ControlPlaneInput) map[string][]Section {
	return map[string][]Section{
		"DEFAULT": {
			// auth_strategy is deprecated for removal and keystone is
			// already its default; writing it makes the file say how the
			// API authenticates.
			{"api", []Option{{"auth_strategy", "keystone"}}},
			{"wsgi", []Option{{"api_paste_config", apiPasteConfig}}},
			{"api_database", []Option{{"connection", connectionURL(in.APIDatabase)}}},
			{"database", []Option{{"connection", connectionURL(in.Database)}}},
		},
		"glance":                       {{"cache", []Option{{"enabled", "true"}, {"backend", cacheBackend}}}},
		"oslo_messaging_notifications": {{"oslo_concurrency", []Option{{"lock_path", lockPath}}}},
	}
}

// withValue returns a copy of opts with the value of key replaced, and
// opts unchanged in content when key is absent.
func withValue(opts []Option, key, value string) []Option {
	out := join(opts)
	for i := range out {
		if out[i].Key == key {
			out[i].Value = value
		}
	}
	return out
}
