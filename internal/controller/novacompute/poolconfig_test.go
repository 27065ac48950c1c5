package novacompute

import (
	"strings"
	"testing"

	novav1alpha1 "github.com/anvil/anvil/api/nova/v1alpha1"
)

func TestBuildPoolConfig(t *testing.T) {
	pool := func(mut func(*novav1alpha1.NovaCompute)) *novav1alpha1.NovaCompute {
		p := &novav1alpha1.NovaCompute{}
		p.Name = "pool-a"
		if mut != nil {
			mut(p)
		}
		return p
	}
	tests := []struct {
		name    string
		pool    *novav1alpha1.NovaCompute
		want    []string
		notWant []string
		wantErr bool
	}{
		{name: "defaults", pool: pool(nil), want: []string{
			"[DEFAULT]\ncompute_driver = libvirt.LibvirtDriver\nstate_path = /var/lib/nova\n",
			"[libvirt]\nvirt_type = kvm\nconnection_uri = qemu:///system\nlive_migration_scheme = tls\nlive_migration_with_native_tls = true\n",
			"[os_vif_ovs]\novsdb_connection = unix:/run/openvswitch/db.sock\n",
			"[oslo_concurrency]\nlock_path = /var/lib/nova/tmp\n",
			"[vnc]\nserver_listen = $my_ip\n",
		}, notWant: []string{"cpu_mode", "images_type", "0.0.0.0"}},
		{name: "libvirt options", pool: pool(func(p *novav1alpha1.NovaCompute) {
			p.Spec.Libvirt = novav1alpha1.LibvirtSpec{VirtType: "qemu", CPUMode: "custom", CPUModels: []string{"Haswell", "Broadwell"}, ImagesType: "qcow2"}
		}), want: []string{"virt_type = qemu\n", "cpu_mode = custom\ncpu_models = Haswell,Broadwell\nimages_type = qcow2\n"}},
		{name: "extraConfig wins and adds", pool: pool(func(p *novav1alpha1.NovaCompute) {
			p.Spec.ExtraConfig = map[string]map[string]string{
				"libvirt": {"virt_type": "qemu", "disk_cachemodes": "network=writeback"},
				"compute": {"cpu_shared_set": "0-1", "cpu_dedicated_set": "2-7"},
			}
		}), want: []string{"virt_type = qemu\n", "disk_cachemodes = network=writeback\n", "[compute]\ncpu_dedicated_set = 2-7\ncpu_shared_set = 0-1\n"}, notWant: []string{"virt_type = kvm"}},
		{name: "an option off the allowlist is refused even without admission", pool: pool(func(p *novav1alpha1.NovaCompute) {
			p.Spec.ExtraConfig = map[string]map[string]string{"DEFAULT": {"log_config_append": "/tmp/evil.conf"}}
		}), wantErr: true},
		{name: "a newline in extraConfig is refused", pool: pool(func(p *novav1alpha1.NovaCompute) {
			p.Spec.ExtraConfig = map[string]map[string]string{"DEFAULT": {"debug": "true\n[evil]"}}
		}), wantErr: true},
		{name: "an owned option is refused even without admission", pool: pool(func(p *novav1alpha1.NovaCompute) {
			p.Spec.ExtraConfig = map[string]map[string]string{"placement": {"auth_url": "https://evil.example.com/v3"}}
		}), wantErr: true},
		{name: "downgrading the bus's TLS is refused", pool: pool(func(p *novav1alpha1.NovaCompute) {
			p.Spec.ExtraConfig = map[string]map[string]string{"oslo_messaging_rabbit": {"ssl": "false-evil"}}
		}), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := BuildPoolConfig(tt.pool)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("rendered %q", got)
				}
				if strings.Contains(err.Error(), "evil") {
					t.Errorf("the error quotes the value: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(string(got), w) {
					t.Errorf("missing %q in\n%s", w, got)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(string(got), w) {
					t.Errorf("unexpected %q in\n%s", w, got)
				}
			}
			again, _ := BuildPoolConfig(tt.pool)
			if string(again) != string(got) || PoolConfigName("p", got) != PoolConfigName("p", again) {
				t.Error("rendering is not deterministic")
			}
		})
	}
}

func TestMissingContractKeys(t *testing.T) {
	got := MissingContractKeys(map[string][]byte{"nova-compute.conf": []byte("x"), "password": nil})
	if strings.Join(got, ",") != "transport_url,password" {
		t.Errorf("missing = %v", got)
	}
	if PoolConfigName("pool-a", []byte("x")) != "pool-a-config-2d711642b7" {
		t.Errorf("name = %s", PoolConfigName("pool-a", []byte("x")))
	}
}
