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
// A pod none of whose images has a mapping is simulated the way kwok would
// simulate it, and its annotation anvil.c5c3.io/pod-runner says
// "simulated"; a pod that runs processes says "process". Nothing that has a
// mapping is reported as having run without running its command.
//
// The state directory holds one directory per node:
//
//	<state>/<node>/host/...                          hostPaths
//	<state>/<node>/pods/<ns>_<pod>_<uid>/volumes/    materialised volumes
//	<state>/<node>/pods/<ns>_<pod>_<uid>/containers/ one work directory per container
//	<state>/<node>/pods/<ns>_<pod>_<uid>/logs/       one log file per container
//
// Every process shares the host's network; pods and nodes report 127.0.0.1.
package podrunner
