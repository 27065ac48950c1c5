package extraconfig

import "fmt"

// AllowedGroup is a set of options spec.extraConfig may set in one section,
// with the one reason they are safe to hand to whoever may edit a pool.
type AllowedGroup struct {
	// Section is the oslo.config group in canonical spelling.
	Section string
	// Why says what the options tune and what stays out of reach.
	Why string
	// Keys are the option names.
	Keys []string
}

// AllowedOptions is everything spec.extraConfig may set; every other option
// is refused. It is a list of what is known to be safe, not of what is known
// to be dangerous: oslo.config and the libraries nova-compute loads read
// options that load code (log_config_append, and with it the logging
// handlers' args), choose drivers, or send the service password to an
// endpoint of the user's choosing (auth_type, endpoint), and a list of those
// is never complete. No option here names a file, a path, a URL, a driver, a
// plugin or a credential. An option a pool needs that is missing here is
// added with its reason, in a reviewed change.
var AllowedOptions = []AllowedGroup{
	{DefaultSection, "the node's capacity and overcommit, as Placement sees it", []string{
		"cpu_allocation_ratio", "ram_allocation_ratio", "disk_allocation_ratio",
		"initial_cpu_allocation_ratio", "initial_ram_allocation_ratio", "initial_disk_allocation_ratio",
		"reserved_host_memory_mb", "reserved_host_disk_mb", "reserved_host_cpus",
	}},
	{DefaultSection, "how much work the node takes on at once", []string{
		"max_concurrent_builds", "max_concurrent_live_migrations", "max_concurrent_snapshots",
	}},
	{DefaultSection, "timeouts, retries and periodic tasks of the compute manager", []string{
		"instance_build_timeout", "reboot_timeout", "rescue_timeout", "resize_confirm_window", "shutdown_timeout",
		"vif_plugging_timeout", "vif_plugging_is_fatal", "block_device_allocate_retries",
		"block_device_allocate_retries_interval", "heal_instance_info_cache_interval", "sync_power_state_interval",
		"update_resources_interval", "running_deleted_instance_action", "running_deleted_instance_poll_interval",
		"running_deleted_instance_timeout",
	}},
	{DefaultSection, "how guests and their disks start", []string{
		"resume_guests_state_on_host_boot", "force_config_drive", "default_ephemeral_format",
		"use_cow_images", "force_raw_images", "preallocate_images",
	}},
	{DefaultSection, "how much the services log; where they log stays the pod's", []string{
		"debug", "default_log_levels",
	}},
	{"compute", "CPU pinning, attach limits and the compute manager's own health checks", []string{
		"cpu_shared_set", "cpu_dedicated_set", "max_disk_devices_to_attach", "live_migration_wait_for_vif_plug",
		"consecutive_build_service_disable_threshold", "resource_provider_association_refresh",
		"packing_host_numa_cells_allocation_strategy", "image_type_exclude_list", "shutdown_retry_interval",
	}},
	{"libvirt", "the guests' virtual hardware and the driver's tuning; the connection to libvirtd stays the pool's", []string{
		"virt_type", "cpu_mode", "cpu_models", "cpu_model_extra_flags", "images_type", "hw_machine_type",
		"disk_cachemodes", "hw_disk_discard", "mem_stats_period_seconds", "num_pcie_ports", "rx_queue_size",
		"tx_queue_size", "wait_soft_reboot_seconds", "sysinfo_serial", "swtpm_enabled", "cpu_power_management",
		"file_backed_memory",
	}},
	{"libvirt", "the pace of live migration; its transport stays native TLS", []string{
		"live_migration_bandwidth", "live_migration_downtime", "live_migration_downtime_steps",
		"live_migration_downtime_delay", "live_migration_completion_timeout", "live_migration_timeout_action",
		"live_migration_permit_post_copy", "live_migration_permit_auto_converge",
	}},
	{"pci", "the devices passed through to guests", []string{"device_spec", "alias", "report_in_placement"}},
	{"oslo_messaging_rabbit", "the bus client's heartbeats and retries; where it connects and its TLS stay the contract's", []string{
		"heartbeat_timeout_threshold", "heartbeat_rate", "rabbit_retry_interval", "rabbit_retry_backoff",
		"rabbit_interval_max", "kombu_reconnect_delay", "rabbit_quorum_queue", "amqp_durable_queues",
	}},
	{"upgrade_levels", "the RPC version the node speaks while the cloud upgrades", []string{"compute"}},
	{"notifications", "what the node notifies; where notifications go stays the contract's", []string{
		"notify_on_state_change", "notification_format",
	}},
	{"os_vif_ovs", "how ports are plugged into the node's switch; which switch stays the pool's", []string{
		"isolate_vif", "per_port_bridge",
	}},
	{"vnc", "whether the node serves consoles; the addresses stay the pool's", []string{"enabled"}},
	{"workarounds", "named workarounds for hypervisor bugs", []string{
		"skip_cpu_compare_on_dest", "skip_cpu_compare_at_startup", "enable_qemu_monitor_announce_self",
		"libvirt_disable_apic",
	}},
}

// allowed indexes AllowedOptions by "section.key".
var allowed = func() map[string]bool {
	m := map[string]bool{}
	for _, g := range AllowedOptions {
		for _, k := range g.Keys {
			m[g.Section+"."+k] = true
		}
	}
	return m
}()

// Allowed tells whether spec.extraConfig may set the option. Section names
// are compared the way oslo.config reads them (see CanonicalSection), keys
// exactly.
func Allowed(section, key string) bool {
	return allowed[CanonicalSection(section)+"."+key]
}

// NotAllowedError is the refusal of an option that is neither owned nor on
// the allowlist. It names the option, never its value.
func NotAllowedError(section, key string) string {
	return fmt.Sprintf("%s.%s is not an option a pool may set in extraConfig: only the options listed in docs/reference/novacompute-admission.md are, since others can load code, change drivers or send the service password elsewhere",
		CanonicalSection(section), key)
}

// Refusal returns the refusal of one option of spec.extraConfig,
// or "" when a pool may set it: an owned option's own reason first, then
// the allowlist's.
func Refusal(section, key string) string {
	if msg, owned := OwnedKeyError(section, key); owned {
		return msg
	}
	if !Allowed(section, key) {
		return NotAllowedError(section, key)
	}
	return ""
}
