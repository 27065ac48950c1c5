package clusterreg

import (
	"strings"
	"testing"
	"time"
)

func TestOptionsWithDefaults(t *testing.T) {
	got := Options{ClusterName: "compute-a"}.WithDefaults()
	want := Options{
		ClusterName:       "compute-a",
		ClustersNamespace: "c5c3-clusters",
		AccessNamespace:   "c5c3-access",
		ServiceAccount:    "target-cluster-access",
		Timeout:           time.Minute,
		TokenExpiration:   30 * 24 * time.Hour,
	}
	if got != want {
		t.Errorf("WithDefaults() = %+v, want %+v", got, want)
	}
	set := Options{ClusterName: "a", ClustersNamespace: "x", AccessNamespace: "y", ServiceAccount: "z", Timeout: time.Second, TokenExpiration: time.Hour}
	if got := set.WithDefaults(); got != set {
		t.Errorf("WithDefaults() overwrote set fields: %+v", got)
	}
}

func TestOptionsValidate(t *testing.T) {
	valid := Options{ClusterName: "compute-a", Namespaces: "openstack"}.WithDefaults()
	tests := []struct {
		name   string
		modify func(*Options)
		// wantErr lists fragments of the error; none means valid.
		wantErr []string
	}{
		{name: "valid", modify: func(*Options) {}},
		{name: "cluster-wide", modify: func(o *Options) { o.Namespaces = "" }},
		{name: "dotted cluster name", modify: func(o *Options) { o.ClusterName = "compute-a.eu-de-1" }},
		{name: "several namespaces with spaces", modify: func(o *Options) { o.Namespaces = " ovn, openstack " }},
		{name: "name missing", modify: func(o *Options) { o.ClusterName = "" }, wantErr: []string{"--name is required"}},
		{name: "name upper case", modify: func(o *Options) { o.ClusterName = "Compute-A" }, wantErr: []string{`--name "Compute-A"`}},
		{name: "name with underscore", modify: func(o *Options) { o.ClusterName = "compute_a" }, wantErr: []string{`--name "compute_a"`}},
		{name: "namespace invalid", modify: func(o *Options) { o.Namespaces = "openstack,Bad" }, wantErr: []string{`--namespaces "openstack,Bad"`}},
		{name: "namespace empty entry", modify: func(o *Options) { o.Namespaces = "openstack,,ovn" }, wantErr: []string{"--namespaces"}},
		{name: "clusters namespace invalid", modify: func(o *Options) { o.ClustersNamespace = "c5c3.clusters" }, wantErr: []string{"--clusters-namespace"}},
		{name: "access namespace empty", modify: func(o *Options) { o.AccessNamespace = "" }, wantErr: []string{"--access-namespace"}},
		{name: "service account invalid", modify: func(o *Options) { o.ServiceAccount = "Access" }, wantErr: []string{"--service-account"}},
		{name: "service account empty", modify: func(o *Options) { o.ServiceAccount = "" }, wantErr: []string{"--service-account"}},
		{name: "timeout zero", modify: func(o *Options) { o.Timeout = 0 }, wantErr: []string{"--timeout"}},
		{name: "timeout negative", modify: func(o *Options) { o.Timeout = -time.Second }, wantErr: []string{"--timeout"}},
		{name: "token expiration shortest", modify: func(o *Options) { o.TokenExpiration = 10 * time.Minute }},
		{name: "token expiration a year", modify: func(o *Options) { o.TokenExpiration = 365 * 24 * time.Hour }},
		{name: "token expiration too short", modify: func(o *Options) { o.TokenExpiration = 5 * time.Minute }, wantErr: []string{"--token-expiration"}},
		{name: "token expiration too long", modify: func(o *Options) { o.TokenExpiration = 366 * 24 * time.Hour }, wantErr: []string{"--token-expiration"}},
		{
			name:    "all problems at once",
			modify:  func(o *Options) { *o = Options{} },
			wantErr: []string{"--name", "--clusters-namespace", "--access-namespace", "--service-account", "--timeout", "--token-expiration"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := valid
			tt.modify(&o)
			err := o.Validate()
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Validate() = nil, want an error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

func TestOptionsNormalizedNamespaces(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "", want: ""},
		{in: "   ", want: ""},
		{in: "openstack", want: "openstack"},
		{in: "ovn,openstack", want: "openstack,ovn"},
		{in: " ovn , openstack,ovn ", want: "openstack,ovn"},
		{in: "openstack,", wantErr: true},
		{in: "Openstack", wantErr: true},
		{in: "open.stack", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Options{Namespaces: tt.in}.NormalizedNamespaces()
			if (err != nil) != tt.wantErr {
				t.Fatalf("NormalizedNamespaces(%q) error = %v, want error %v", tt.in, err, tt.wantErr)
			}
			if got != tt.want {
				t.Errorf("NormalizedNamespaces(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
