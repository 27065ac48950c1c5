// Package podrunner is a kubelet for test and devstack clusters. It
// registers nodes through virtual-kubelet's node library and runs the pods
// bound to them as processes on this host, so that the pods whose work
// matters, nova-compute above all, really run.
//
// For each pod the runner
//   - materialises its Secret, ConfigMap, projected, downwardAPI and
//     emptyDir volumes under the pod's work directory, and its hostPaths
//     under the node's own directory, so that two nodes never share one;
//   - resolves its env, including Secret and ConfigMap references and the
//     downward API;
//   - maps each container's image to a local command through an ImageMap,
//     translating mount paths in the arguments to the materialised ones;
//   - runs the commands in process groups of their own, honours the
//     restart policy, and reports phases, container states and exit codes;
//   - stops the processes (SIGTERM, then SIGKILL after the grace period)
//     and removes the work directory when the pod is deleted.
//
// DefaultImageMap runs nova-manage and nova-compute (with the fake driver)
// from Nova images. NovaControlPlaneMappings, which a caller puts in front
// of it (anvil-podrunner does with --run-nova-control-plane), also runs
// Nova's control plane as this host's Debian programs: nova-conductor,
// nova-scheduler, nova-novncproxy, and nova-api and nova-metadata under
// uwsgi listening on 127.0.0.1 at the container's port. Each Nova process
// gets a generated configuration file passed last, which keeps its state in
// the container's work directory and sets its host name: the node's for
// nova-compute, the pod's for the control plane, as a pod's host name would
// be. Without those mappings control-plane pods are simulated.
//
// OVNMappings, also put in front (anvil-podrunner --run-ovn), run the pods
// of an OVNCentral and an OVNChassis by the contract of docs/design/ovn.md
// as this host's Debian OVS and OVN programs: each central database member
// as a Raft member of its database, ovn-northd, and a chassis's
// ovsdb-server, ovs-vswitchd with the dummy datapath and ovn-controller.
// They read the contract's container names, env and mounts and do not run
// the images' scripts.
//
// A node with Node.NetNS (anvil-podrunner --metadata-agent-nodes) gets a
// network namespace of its own, NodeNetNSName, for as long as the runner
// runs: its chassis's ovs-vswitchd runs there with the userspace datapath,
// which moves real packets, and ovn-controller beside it. The runner
// relays the TCP addresses those programs dial (Command.Relays) from
// inside the namespace to the same addresses on the host.
// OVNMetadataAgentMappings run a NeutronMetadataAgent's pods on such a
// node: wait-for-chassis, and Debian's neutron-ovn-metadata-agent as root
// in the namespace, with the shared secret only in its environment.
//
// A pod on the host network, and any pod whose mappings do not ask
// otherwise, reports 127.0.0.1 as its IP. A mapping with OwnAddress, the
// central member's, gives its pod a loopback address of its own,
// 127.x.y.z derived from namespace and name (OwnPodAddress), because the
// members of one database all listen on the same ports. In the OVN
// addresses it hands a program, the runner translates a member's DNS name
// to that address and a Service's cluster IP to the address and target
// port of the pod the Service selects, since this host resolves and routes
// neither. With Options.ForwardNodePorts (--forward-node-ports) the runner
// also stands in for kube-proxy's NodePorts: it listens on 127.0.0.1 at
// the node port of every NodePort Service that selects one of its process
// pods and forwards TCP to the pod.
//
// A persistentVolumeClaim is a directory of the node, keyed by namespace
// and claim name, that survives the pod, so that a recreated StatefulSet
// member starts from what it stored.
//
// A pod none of whose images has a mapping is simulated the way kwok would
// simulate it, and its annotation anvil.c5c3.io/pod-runner says
// "simulated"; a pod that runs processes says "process". Nothing that has a
// mapping is reported as having run without running its command.
//
// The state directory holds one directory per node:
//
//	<state>/<node>/host/...                          hostPaths
//	<state>/<node>/claims/<ns>_<claim>/              persistentVolumeClaims
//	<state>/<node>/pods/<ns>_<pod>_<uid>/volumes/    materialised volumes
//	<state>/<node>/pods/<ns>_<pod>_<uid>/containers/ one work directory per container
//	<state>/<node>/pods/<ns>_<pod>_<uid>/logs/       one log file per container
//
// Every process shares the host's network, except those a mapping starts
// in its node's own namespace; nodes report 127.0.0.1, and so do pods
// unless they have an address of their own.
package podrunner
