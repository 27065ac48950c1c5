package novaconfig

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// Keys of the contract Secret and the path a compute mounts it at. They are
// the interface between the Nova and every node pool, so they never change.
const (
	// KeyConfig holds the nova.conf fragment.
	KeyConfig = "nova-compute.conf"
	// KeyTransportURL holds the rabbit:// URL with the broker credentials,
	// spelled with EnvLiteral because the pool passes it to nova-compute as
	// an OS_ variable, which oslo.config expands.
	KeyTransportURL = "transport_url"
	// KeyPassword holds the nova service user's password, spelled with
	// EnvLiteral for the same reason.
	KeyPassword = "password"
	// KeyMetadataSecret holds the secret the metadata agent signs requests with.
	KeyMetadataSecret = "metadata_proxy_shared_secret"
	// KeyCellName holds the cell a compute is mapped into.
	KeyCellName = "cell_name"
	// KeyCABundle holds the broker's CA bundle; present only under TLS.
	KeyCABundle = "ca.crt"
	// MountPath is where a compute mounts the Secret. The fragment's
	// ssl_ca_file points into it, so another path leaves the CA unreadable.
	MountPath = "/etc/nova/compute-config"
)

// caFile is the ssl_ca_file value; it joins the two constants because the
// fragment must name the file where the pool actually mounts it.
const caFile = MountPath + "/" + KeyCABundle

// ServiceUser is the Keystone identity every client section authenticates as.
type ServiceUser struct {
	Username          string
	ProjectName       string
	UserDomainName    string
	ProjectDomainName string
}

// OptionalService is a catalog service the Nova may talk to: Cinder or
// Barbican. Override pins its endpoint instead of the catalog lookup.
type OptionalService struct {
	Enabled  bool
	Override string
}

// ContractInput is everything the in-cluster contract is made of. The
// controller fills it from the Nova spec and the Secrets it references.
type ContractInput struct {
	// Debug turns on debug logging in the compute.
	Debug bool
	// KeystoneEndpoint is the in-cluster Keystone URL used as auth_url.
	KeystoneEndpoint string
	// KeystonePublicEndpoint is www_authenticate_uri; empty falls back to
	// KeystoneEndpoint.
	KeystonePublicEndpoint string
	// Region is written as region_name and its per-service twins; empty
	// writes none of them.
	Region string
	// ServiceUser is the identity of every client section.
	ServiceUser ServiceUser
	// Password is the service user's password. It goes to its own key,
	// never into the fragment.
	Password string
	// PlacementOverride, NeutronOverride and GlanceOverride pin an endpoint
	// with endpoint_override when non-empty.
	PlacementOverride, NeutronOverride, GlanceOverride string
	// Cinder and Barbican add their sections only when enabled.
	Cinder, Barbican OptionalService
	// TransportURL is the in-cluster rabbit:// URL.
	TransportURL string
	// CABundle is the broker's CA. Non-empty means the bus uses TLS: the key
	// ca.crt is published and the fragment turns on ssl.
	CABundle []byte
	// MetadataSharedSecret is the metadata proxy's shared secret.
	MetadataSharedSecret string
	// CellName is the cell computes are mapped into, "cell1".
	CellName string
	// ConsoleProxyEnabled says whether the noVNC proxy runs.
	ConsoleProxyEnabled bool
	// NoVNCProxyBaseURL is the proxy URL instances' consoles are served from;
	// required while ConsoleProxyEnabled and ignored otherwise.
	NoVNCProxyBaseURL string
}

// RemoteInput is what the remote contract replaces: the addresses a compute
// on another cluster can reach.
type RemoteInput struct {
	// KeystoneEndpoint is spec.remoteCompute.keystoneEndpoint, the public
	// https Keystone URL.
	KeystoneEndpoint string
	// TransportURL is the rabbit:// URL of the broker's external listener.
	TransportURL string
}

// MissingInputError reports a required input that is empty. It names the
// input field, never a value.
type MissingInputError struct {
	// Input is the field, such as "ContractInput.KeystoneEndpoint".
	Input string
}

// Error names the empty input.
func (e *MissingInputError) Error() string {
	return fmt.Sprintf("compute contract input %s is empty", e.Input)
}

// view holds what differs between the in-cluster and the remote contract, so
// both are built by one function and cannot drift apart by accident.
type view struct {
	authURL      string
	iface        string
	cinderURL    string
	pinEndpoints bool
	transportURL string
	// authInput and transportInput name the fields the two URLs came from,
	// so an error points at the input the caller has to fix.
	authInput      string
	transportInput string
}

// RenderContract returns the data of the in-cluster contract Secret,
// {nova}-compute-config. On any error it returns no data, so the caller
// keeps the Secret it published last.
func RenderContract(in ContractInput) (map[string][]byte, error) {
	return render(in, view{
		authURL:        in.KeystoneEndpoint,
		iface:          "internal",
		cinderURL:      "internalURL",
		pinEndpoints:   true,
		transportURL:   in.TransportURL,
		authInput:      "ContractInput.KeystoneEndpoint",
		transportInput: "ContractInput.TransportURL",
	})
}

// RenderRemoteContract returns the data of {nova}-remote-compute-config: the
// same contract seen from another cluster, which reaches Keystone and the
// catalog only through public endpoints and the broker through its external
// listener.
func RenderRemoteContract(in ContractInput, remote RemoteInput) (map[string][]byte, error) {
	return render(in, view{
		authURL:        remote.KeystoneEndpoint,
		iface:          "public",
		cinderURL:      "publicURL",
		pinEndpoints:   false,
		transportURL:   remote.TransportURL,
		authInput:      "RemoteInput.KeystoneEndpoint",
		transportInput: "RemoteInput.TransportURL",
	})
}

func render(in ContractInput, v view) (map[string][]byte, error) {
	if err := checkRequired(in, v); err != nil {
		return nil, err
	}
	file := fragment(in, v)
	// Credentials are checked with the sections that read them, before the
	// scheme, so a newline anywhere is reported the same way: by section.
	all := append(append([]Section(nil), file.Sections...), credentialSections(in, v)...)
	if name, ok := firstUnsafeSection(all); ok {
		return nil, &UnsafeValueError{Section: name}
	}
	if name, ok := firstSectionWhere(envCredentialSections(in, v), hasBackslashDollar); ok {
		return nil, &UnsafeValueError{Section: name, Reason: BackslashDollar}
	}
	if err := CheckTransportURL(v.transportURL); err != nil {
		return nil, fmt.Errorf("%s: %w", v.transportInput, err)
	}
	conf, err := file.Render()
	if err != nil {
		return nil, err
	}
	data := map[string][]byte{
		KeyConfig:         conf,
		KeyTransportURL:   []byte(EnvLiteral(v.transportURL)),
		KeyPassword:       []byte(EnvLiteral(in.Password)),
		KeyMetadataSecret: []byte(in.MetadataSharedSecret),
		KeyCellName:       []byte(in.CellName),
	}
	if tlsEnabled(in) {
		// Copied so a later change to the caller's slice cannot alter data
		// that has already been hashed.
		data[KeyCABundle] = append([]byte(nil), in.CABundle...)
	}
	return data, nil
}

// checkRequired names the first empty input a working compute cannot do
// without. The remote contract needs the in-cluster KeystoneEndpoint too,
// because www_authenticate_uri may fall back to it.
func checkRequired(in ContractInput, v view) error {
	required := []struct{ name, value string }{
		{"ContractInput.KeystoneEndpoint", in.KeystoneEndpoint},
		{v.authInput, v.authURL},
		{v.transportInput, v.transportURL},
		{"ContractInput.ServiceUser.Username", in.ServiceUser.Username},
		{"ContractInput.ServiceUser.ProjectName", in.ServiceUser.ProjectName},
		{"ContractInput.ServiceUser.UserDomainName", in.ServiceUser.UserDomainName},
		{"ContractInput.ServiceUser.ProjectDomainName", in.ServiceUser.ProjectDomainName},
		{"ContractInput.Password", in.Password},
		{"ContractInput.MetadataSharedSecret", in.MetadataSharedSecret},
		{"ContractInput.CellName", in.CellName},
	}
	for _, r := range required {
		if r.value == "" {
			return &MissingInputError{Input: r.name}
		}
	}
	if in.ConsoleProxyEnabled && in.NoVNCProxyBaseURL == "" {
		return &MissingInputError{Input: "ContractInput.NoVNCProxyBaseURL"}
	}
	return nil
}

func tlsEnabled(in ContractInput) bool { return len(in.CABundle) > 0 }

// fragment builds nova-compute.conf. The section order is part of the
// contract and must not change.
func fragment(in ContractInput, v view) File {
	region := func(key string) []Option {
		if in.Region == "" {
			return nil
		}
		return []Option{{key, in.Region}}
	}
	pinned := func(key, override string) []Option {
		if !v.pinEndpoints || override == "" {
			return nil
		}
		return []Option{{key, override}}
	}
	identity := []Option{
		{"auth_type", "password"},
		{"auth_url", v.authURL},
		{"username", in.ServiceUser.Username},
		{"project_name", in.ServiceUser.ProjectName},
		{"user_domain_name", in.ServiceUser.UserDomainName},
		{"project_domain_name", in.ServiceUser.ProjectDomainName},
	}
	client := func(override string) []Option {
		return join(identity, region("region_name"),
			[]Option{{"valid_interfaces", v.iface}}, pinned("endpoint_override", override))
	}
	publicKeystone := in.KeystonePublicEndpoint
	if publicKeystone == "" {
		publicKeystone = in.KeystoneEndpoint
	}

	sections := []Section{
		{"DEFAULT", []Option{{"use_stderr", "true"}, {"debug", strconv.FormatBool(in.Debug)}}},
		{"keystone_authtoken", join(identity[:2], []Option{{"www_authenticate_uri", publicKeystone}},
			identity[2:], region("region_name"))},
		// No region_name here: Nova registers only the session and auth
		// plugin options for [service_user], so the line would be dead.
		{"service_user", join(identity, []Option{{"send_service_user_token", "true"}})},
		{"placement", client(in.PlacementOverride)},
		{"neutron", client(in.NeutronOverride)},
		{"glance", join([]Option{{"valid_interfaces", v.iface}}, region("region_name"),
			pinned("endpoint_override", in.GlanceOverride))},
		{"oslo_messaging_rabbit", rabbit(in)},
		{"oslo_messaging_notifications", []Option{{"driver", "noop"}}},
		{"upgrade_levels", []Option{{"compute", "auto"}}},
		{"vnc", vnc(in)},
	}
	if in.Cinder.Enabled {
		sections = append(sections, Section{"cinder", join(identity,
			[]Option{{"catalog_info", "block-storage:cinder:" + v.cinderURL}},
			region("os_region_name"), pinned("endpoint_template", in.Cinder.Override))})
	}
	if in.Barbican.Enabled {
		sections = append(sections,
			Section{"key_manager", []Option{{"backend", "barbican"}}},
			Section{"barbican", join([]Option{
				{"auth_endpoint", v.authURL},
				{"barbican_endpoint_type", v.iface},
				{"send_service_user_token", "true"},
			}, region("barbican_region_name"), pinned("barbican_endpoint", in.Barbican.Override))})
	}
	return File{Sections: sections}
}

func rabbit(in ContractInput) []Option {
	opts := []Option{
		{"rabbit_quorum_queue", "true"},
		{"rabbit_transient_quorum_queue", "true"},
		{"use_queue_manager", "true"},
	}
	if tlsEnabled(in) {
		opts = append(opts, Option{"ssl", "true"}, Option{"ssl_ca_file", caFile})
	}
	return opts
}

// vnc writes enabled = false explicitly when the proxy is off, because
// Nova's default is true and a compute would otherwise advertise consoles
// nobody serves.
func vnc(in ContractInput) []Option {
	if !in.ConsoleProxyEnabled {
		return []Option{{"enabled", "false"}}
	}
	return []Option{{"enabled", "true"}, {"novncproxy_base_url", in.NoVNCProxyBaseURL}}
}

// credentialSections lists the credential keys as options of the sections
// that consume them. They are only checked, never rendered: it lets a bad
// password be reported by section like any other value.
func credentialSections(in ContractInput, v view) []Section {
	password := []Option{{KeyPassword, in.Password}}
	out := []Section{
		{"DEFAULT", []Option{{KeyTransportURL, v.transportURL}, {KeyCellName, in.CellName}}},
		{"keystone_authtoken", password},
		{"service_user", password},
		{"placement", password},
		{"neutron", []Option{{KeyPassword, in.Password}, {KeyMetadataSecret, in.MetadataSharedSecret}}},
	}
	if in.Cinder.Enabled {
		out = append(out, Section{"cinder", password})
	}
	return out
}

// envCredentialSections are the credentials a pool hands nova-compute as
// OS_<GROUP>__<OPT> variables, by the section that reads them: only these
// keys are spelled with EnvLiteral, so only they are held to its limit.
func envCredentialSections(in ContractInput, v view) []Section {
	return []Section{
		{"DEFAULT", []Option{{KeyTransportURL, v.transportURL}}},
		{"keystone_authtoken", []Option{{KeyPassword, in.Password}}},
	}
}

// EnvLiteral spells v so that oslo.config reads back exactly v from an
// OS_<GROUP>__<OPT> variable, which it expands like a file's value: every
// '$' is doubled. No spelling survives a backslash before a '$', so the
// renderers refuse one (BackslashDollar). Unlike literal it adds no quotes,
// because a variable's value is neither trimmed nor unquoted.
func EnvLiteral(v string) string {
	return strings.ReplaceAll(v, "$", "$$")
}

// join concatenates option lists into a fresh slice, so no section shares
// a backing array with another.
func join(parts ...[]Option) []Option {
	var out []Option
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// CheckTransportURL accepts only a rabbit:// URL, the one driver the
// fragment configures. Its errors name at most the scheme, because the URL
// carries the broker password.
func CheckTransportURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the input, so none of it is passed on.
		return errors.New("transport URL cannot be parsed as a URL")
	}
	switch u.Scheme {
	case "rabbit":
		return nil
	case "":
		return errors.New("transport URL has no scheme; want rabbit")
	default:
		return fmt.Errorf("transport URL scheme %q is not rabbit", u.Scheme)
	}
}

// Hash returns the hex SHA-256 of "key=value\n" for every key in sorted
// order. A pool puts it into its pod template, so any change of the contract
// rolls the pods and equal data never does.
func Hash(data map[string][]byte) string {
	keys := make([]string, 0, len(data))
	for k := range data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		h.Write([]byte(k))
		h.Write([]byte{'='})
		h.Write(data[k])
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}

// RenderDelivered renders the contract a Nova publishes for nova-compute:
// the remote contract when remote is given, else the in-cluster one. Its
// errors are prefixed with the spec field whose values were refused, so
// that the Nova, and the ControlPlane that delivers the same data, report
// the field to fix.
func RenderDelivered(in ContractInput, remote *RemoteInput) (map[string][]byte, error) {
	if remote == nil {
		data, err := RenderContract(in)
		if err != nil {
			return nil, fmt.Errorf("spec: %w", err)
		}
		return data, nil
	}
	data, err := RenderRemoteContract(in, *remote)
	if err != nil {
		return nil, fmt.Errorf("spec.remoteCompute: %w", err)
	}
	return data, nil
}
