package operator

import (
	"flag"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/anvil/anvil/internal/controller/novacompute"
)

func TestDefaults(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.ClustersNamespace != "c5c3-clusters" || !o.LeaderElect || o.HealthProbeBindAddress != ":8081" || o.PoolWorkers != novacompute.DefaultWorkers {
		t.Errorf("defaults = %+v", o)
	}
	mo := o.ManagerOptions()
	if !mo.LeaderElection || mo.LeaderElectionID == "" || mo.Scheme == nil {
		t.Errorf("manager options = %+v", mo)
	}
	// A stalled remote read must end, or it holds its controller's only worker.
	if got := mo.Controller.ReconciliationTimeout; got != PassTimeout || got <= 0 {
		t.Errorf("pass timeout = %s, want %s", got, PassTimeout)
	}
	// Metrics are served over TLS to authorized callers unless told not to.
	if m := mo.Metrics; !m.SecureServing || m.FilterProvider == nil || len(m.TLSOpts) == 0 || m.BindAddress != ":8443" {
		t.Errorf("metrics options = %+v, want secure serving with the authn/authz filter on :8443", m)
	}
	o.MetricsSecure = false
	if m := o.ManagerOptions().Metrics; m.SecureServing || m.FilterProvider != nil {
		t.Errorf("--metrics-secure=false still serves securely: %+v", m)
	}
}

func TestValidate(t *testing.T) {
	valid := Options{HealthProbeBindAddress: ":8081", ClustersNamespace: "c5c3-clusters", WatchNamespaces: []string{"openstack"}}
	tests := []struct {
		name    string
		mutate  func(*Options)
		wantErr string
	}{
		{name: "defaults", mutate: func(*Options) {}},
		{name: "multi-cluster off", mutate: func(o *Options) { o.ClustersNamespace = "" }},
		{name: "bad clusters namespace", mutate: func(o *Options) { o.ClustersNamespace = "Not_A_Namespace" }, wantErr: "--clusters-namespace"},
		{name: "bad lease namespace", mutate: func(o *Options) { o.LeaderElectionNamespace = "a.b" }, wantErr: "--leader-election-namespace"},
		{name: "no probe address", mutate: func(o *Options) { o.HealthProbeBindAddress = "" }, wantErr: "--health-probe-bind-address"},
		{name: "watched namespaces", mutate: func(o *Options) { o.WatchNamespaces = []string{"openstack", "ovn"} }},
		{name: "bad watched namespace", mutate: func(o *Options) { o.WatchNamespaces = []string{"openstack", "Bad"} }, wantErr: "--watch-namespaces"},
		{name: "no watched namespaces", mutate: func(o *Options) { o.WatchNamespaces = nil }, wantErr: "--watch-namespaces is required"},
		{name: "every namespace, asked for", mutate: func(o *Options) { o.WatchNamespaces, o.AllNamespaces = nil, true }},
		{name: "every namespace beside names", mutate: func(o *Options) { o.AllNamespaces = true }, wantErr: "'*' stands alone"},
		{name: "a star among names", mutate: func(o *Options) { o.WatchNamespaces = []string{"openstack", "*"} }, wantErr: "'*' stands alone"},
		{name: "management cluster named", mutate: func(o *Options) { o.ManagementClusterID = "prod-eu-1" }},
		{name: "management cluster not a label value", mutate: func(o *Options) { o.ManagementClusterID = "prod/eu" }, wantErr: "--management-cluster-id"},
		{name: "pool workers left to the default", mutate: func(o *Options) { o.PoolWorkers = 0 }},
		{name: "pool workers at the bound", mutate: func(o *Options) { o.PoolWorkers = maxPoolWorkers }},
		{name: "negative pool workers", mutate: func(o *Options) { o.PoolWorkers = -1 }, wantErr: "--pool-workers"},
		{name: "pool workers past the bound", mutate: func(o *Options) { o.PoolWorkers = maxPoolWorkers + 1 }, wantErr: "--pool-workers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.mutate(&o)
			err := o.Validate()
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v does not name %s", err, tt.wantErr)
			}
		})
	}
}

func TestSchemeKnowsEveryKind(t *testing.T) {
	s := NewScheme()
	want := map[string][]string{
		"c5c3.io":                   {"ControlPlane"},
		"nova.openstack.c5c3.io":    {"Nova", "NovaCompute"},
		"ovn.openstack.c5c3.io":     {"OVNCentral", "OVNChassis"},
		"neutron.openstack.c5c3.io": {"NeutronMetadataAgent"},
	}
	for group, kinds := range want {
		for _, k := range kinds {
			found := false
			for gvk := range s.AllKnownTypes() {
				if gvk.Group == group && gvk.Version == "v1alpha1" && gvk.Kind == k {
					found = true
				}
			}
			if !found {
				t.Errorf("scheme lacks %s/v1alpha1 %s", group, k)
			}
		}
	}
}

func TestWatchNamespacesFlag(t *testing.T) {
	tests := []struct {
		value   string
		want    []string
		all     bool
		wantErr string
	}{
		{value: "openstack", want: []string{"openstack"}},
		{value: " openstack, ovn ,", want: []string{"openstack", "ovn"}},
		{value: "*", all: true},
		{value: " * ", all: true},
		{value: "", wantErr: "--watch-namespaces is required"},
		{value: "openstack,*", want: []string{"openstack", "*"}, wantErr: "'*' stands alone"},
	}
	for _, tt := range tests {
		t.Run(tt.value, func(t *testing.T) {
			o := Options{HealthProbeBindAddress: ":8081"}
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			o.BindFlags(fs)
			if err := fs.Parse([]string{"--watch-namespaces=" + tt.value}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(o.WatchNamespaces, tt.want) || o.AllNamespaces != tt.all {
				t.Errorf("namespaces %q, every namespace %v; want %q, %v", o.WatchNamespaces, o.AllNamespaces, tt.want, tt.all)
			}
			err := o.Validate()
			if tt.wantErr == "" && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("error %v does not say %s", err, tt.wantErr)
			}
		})
	}
}

func TestCacheOptions(t *testing.T) {
	o := Options{ClustersNamespace: "c5c3-clusters", AllNamespaces: true}
	if c := o.cacheOptions(); c.DefaultNamespaces != nil || c.ByObject != nil {
		t.Errorf("with --watch-namespaces='*' the cache is limited: %+v", c)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	o.BindFlags(fs)
	if err := fs.Parse([]string{"--watch-namespaces", " openstack, ovn ,", "--clusters-namespace", "c5c3-clusters"}); err != nil {
		t.Fatal(err)
	}
	c := o.cacheOptions()
	if got := slices.Sorted(maps.Keys(c.DefaultNamespaces)); !slices.Equal(got, []string{"openstack", "ovn"}) {
		t.Errorf("cached namespaces %v, want openstack and ovn", got)
	}
	// Secrets are cached where the registrations live too, and nowhere else.
	for obj, by := range c.ByObject {
		if _, ok := obj.(*corev1.Secret); !ok {
			t.Errorf("a per-object cache rule for %T", obj)
			continue
		}
		if got := slices.Sorted(maps.Keys(by.Namespaces)); !slices.Equal(got, []string{"c5c3-clusters", "openstack", "ovn"}) {
			t.Errorf("Secrets cached in %v", got)
		}
	}
	if len(c.ByObject) != 1 {
		t.Errorf("%d per-object cache rules, want the Secrets' only", len(c.ByObject))
	}
}

func TestWebhookCertFlags(t *testing.T) {
	parse := func(args ...string) (*Options, error) {
		o := &Options{}
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		o.BindFlags(fs)
		if err := fs.Parse(append([]string{"--watch-namespaces=openstack"}, args...)); err != nil {
			t.Fatal(err)
		}
		return o, o.Validate()
	}
	if o, err := parse(); err != nil || o.WebhookCerts.Secret != "" {
		t.Fatalf("by default the operator issues certificates (%q) or fails: %v", o.WebhookCerts.Secret, err)
	}
	full := []string{"--webhook-cert-dir=/certs", "--webhook-cert-secret=anvil-system/anvil-operator-webhook-tls",
		"--webhook-configuration=anvil-operator", "--webhook-cert-hosts=svc.anvil-system.svc, 127.0.0.1"}
	o, err := parse(full...)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := o.webhookCertsConfig()
	if err != nil || cfg == nil {
		t.Fatalf("config %+v, %v", cfg, err)
	}
	if cfg.Secret.Namespace != "anvil-system" || cfg.Secret.Name != "anvil-operator-webhook-tls" || cfg.CertDir != "/certs" ||
		!slices.Equal(cfg.Hosts, []string{"svc.anvil-system.svc", "127.0.0.1"}) || cfg.Lifetimes.Serving >= cfg.Lifetimes.CA {
		t.Errorf("config %+v", cfg)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no namespace", []string{"--webhook-cert-secret=tls"}, "--webhook-cert-secret \"tls\" is not namespace/name"},
		{"no configuration", []string{"--webhook-configuration="}, "needs --webhook-configuration"},
		{"no hosts", []string{"--webhook-cert-hosts="}, "needs --webhook-cert-hosts"},
		{"no directory", []string{"--webhook-cert-dir="}, "needs --webhook-cert-dir"},
		{"webhooks off", []string{"--enable-webhooks=false"}, "needs --enable-webhooks"},
		{"serving outlives the CA", []string{"--webhook-cert-validity=48h", "--webhook-ca-validity=24h"}, "must be shorter than --webhook-ca-validity"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(append(slices.Clone(full), tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one with %q", err, tt.wantErr)
			}
		})
	}
}

// The workload policy the webhooks and the controllers share carries the
// image flags; digests are required only when asked for.
func TestWorkloadPolicyFlags(t *testing.T) {
	tests := []struct {
		args    []string
		digests bool
		id      string
	}{
		{args: nil},
		{args: []string{"--require-image-digests"}, digests: true},
		{args: []string{"--require-image-digests=false", "--management-cluster-id=prod-eu-1"}, id: "prod-eu-1"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			o := Options{}
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			o.BindFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			if got := o.WorkloadPolicy().RequireDigests; got != tt.digests || o.ManagementClusterID != tt.id {
				t.Errorf("RequireDigests %v, management cluster %q; want %v, %q", got, o.ManagementClusterID, tt.digests, tt.id)
			}
		})
	}
}
