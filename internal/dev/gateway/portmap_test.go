package gateway

import (
	"maps"
	"testing"
)

func TestParsePortMap(t *testing.T) {
	for _, tc := range []struct {
		spec    string
		want    PortMap
		wantErr bool
	}{
		{spec: "", want: PortMap{}},
		{spec: "443=8443", want: PortMap{443: 8443}},
		{spec: " 443=8443 , 80=8080,", want: PortMap{443: 8443, 80: 8080}},
		{spec: "443", wantErr: true},
		{spec: "443=", wantErr: true},
		{spec: "0=8443", wantErr: true},
		{spec: "443=65536", wantErr: true},
		{spec: "443=x", wantErr: true},
		{spec: "443=8443,443=9443", wantErr: true},
		{spec: "443=8443,80=8443", wantErr: true},
	} {
		got, err := ParsePortMap(tc.spec)
		if (err != nil) != tc.wantErr {
			t.Errorf("ParsePortMap(%q) error = %v, wantErr %v", tc.spec, err, tc.wantErr)
			continue
		}
		if !tc.wantErr && !maps.Equal(got, tc.want) {
			t.Errorf("ParsePortMap(%q) = %v, want %v", tc.spec, got, tc.want)
		}
	}
}

func TestPortMapHostPort(t *testing.T) {
	m := PortMap{443: 8443}
	if got := m.HostPort(443); got != 8443 {
		t.Errorf("HostPort(443) = %d, want 8443", got)
	}
	if got := m.HostPort(80); got != 80 {
		t.Errorf("an unmapped port is served as it is: HostPort(80) = %d", got)
	}
	if got := (PortMap{443: 8443, 80: 8080}).String(); got != "443=8443,80=8080" {
		t.Errorf("String() = %q", got)
	}
}
