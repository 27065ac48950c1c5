#!/usr/bin/env bash
# Builds every pinned tool into bin/ from Go modules only:
# `build.sh [--force] [kube] [test] [lint]`, kube and lint when none is named.
#
# The tools live in two Go modules under hack/tools: kube (everything
# built on the Kubernetes libraries and etcd, which share one dependency
# graph so that the libraries compile once) and lint. Neither has to agree
# with Anvil's own go.mod. A stamp next to the binaries records what they were
# built from; when it matches, this script does nothing, which keeps
# a warm `make test` cheap.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bin="${ANVIL_BIN:-$root/bin}"
tools="$root/hack/tools"
# The same build settings as Anvil's tests and image (see the Makefile): the
# Kubernetes libraries the tools share with Anvil then compile once, and a
# first `make test` reuses them from the build cache. Every binary is linked
# with -s -w, so the compiler need not generate DWARF either.
export CGO_ENABLED=0
build=(go build -trimpath -gcflags=all=-dwarf=false)

# Pinned versions that are stamped into binaries which report them.
KUBE_VERSION="v1.37.2"
KWOK_VERSION="v0.8.0"

# Groups, each with its own stamp, so that `make test-all` can build the
# linter at low priority beside the tests while the clusters' binaries come
# first, and a devstack never waits for the linter:
#   kube: the clusters, cert-manager and the generators (module kube)
#   test: the part of kube that the Go tests run; the gate builds only
#         this, since kubectl and kwokctl serve the devstack and the e2e
#         checks alone and cost about 80 CPU-seconds of a fresh build
#   lint: golangci-lint and govulncheck (module lint)
# A kube build also stamps test, which it contains.
kube_binaries=(kube-apiserver kube-controller-manager kube-scheduler kubectl etcd kwok kwokctl controller-gen helm cert-manager-controller)
test_binaries=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok controller-gen helm cert-manager-controller)
lint_binaries=(golangci-lint govulncheck)
# cert-manager's CRDs, copied from the module its controller is built from.
cert_manager_crds=(certificaterequests certificates clusterissuers issuers)

force=false
groups=()
for arg in "$@"; do
  case "$arg" in
    --force) force=true ;;
    kube | test | lint) groups+=("$arg") ;;
    *) echo "usage: $0 [--force] [kube] [test] [lint]" >&2; exit 2 ;;
  esac
done
[[ ${#groups[@]} -gt 0 ]] || groups=(kube lint)

# want_stamp GROUP hashes what the group is built from: the toolchain, this
# script and its modules (with hack/tools/kube/cert-manager-controller, a
# main package of ours).
want_stamp() {
  local module="$1"
  [[ "$module" == test ]] && module=kube
  local dirs=("$tools/$module")
  {
    go version
    cat "$tools/build.sh"
    find "${dirs[@]}" -name go.mod -o -name go.sum -o -name '*.go' | LC_ALL=C sort | xargs cat
  } | sha256sum | cut -d' ' -f1
}

all_present() {
  local b c names=()
  case "$1" in
    kube) names=("${kube_binaries[@]}") ;;
    test) names=("${test_binaries[@]}") ;;
    lint) names=("${lint_binaries[@]}") ;;
  esac
  for b in "${names[@]}"; do [[ -x "$bin/$b" ]] || return 1; done
  if [[ "$1" != lint ]]; then
    for c in "${cert_manager_crds[@]}"; do [[ -f "$bin/cert-manager-crds/cert-manager.io_$c.yaml" ]] || return 1; done
  fi
}

step() { printf 'tools: %s\n' "$*"; }

# build_kube builds the whole group; build_test, the part the tests run.
build_test() { build_kube_family test; }
build_kube() { build_kube_family kube; }

# build_kube_family GROUP builds GROUP's binaries of the Kubernetes family,
# etcd among them, and copies cert-manager's CRDs.
build_kube_family() {
  local group="$1"
  # One `go build` for the whole family (hack/tools/kube): the packages the
  # tools share, gRPC and protobuf with etcd's too, are compiled once, and
  # the binaries link in parallel. etcd's server v3.7.0 is the release of
  # the etcd client Kubernetes v1.37 asks for, so it adds no second version
  # of anything.
  # cert-manager's controller: hack/tools/kube/cert-manager-controller starts
  # the module's own controllers (upstream's cmd/controller is a module the
  # proxy cannot serve). Its webhook and cainjector are not built: the CRDs
  # below are applied directly, have one version and need no conversion, and
  # nothing here asks for a CA bundle to be injected.
  read -r cm_version cm_dir < <(cd "$tools/kube" && go mod download github.com/cert-manager/cert-manager &&
    go list -m -f '{{.Version}} {{.Dir}}' github.com/cert-manager/cert-manager)
  [[ -d "${cm_dir:-}" ]] || { echo "tools: cannot locate the cert-manager module" >&2; exit 1; }
  # Each -X names a package of one tool; the linker ignores it in the others.
  ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$KUBE_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=37 -X $pkg.gitTreeState=clean"
  done
  ldflags+=" -X sigs.k8s.io/kwok/pkg/consts.Version=$KWOK_VERSION -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=$KUBE_VERSION"
  # go.mod pins cert-manager's version, which its binary reports in its user agent.
  ldflags+=" -X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$cm_version"
  local mains=(go.etcd.io/etcd/server/v3 k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager
    k8s.io/kubernetes/cmd/kube-scheduler sigs.k8s.io/kwok/cmd/kwok
    sigs.k8s.io/controller-tools/cmd/controller-gen helm.sh/helm/v3/cmd/helm ./cert-manager-controller)
  [[ $group == kube ]] && mains+=(k8s.io/kubernetes/cmd/kubectl sigs.k8s.io/kwok/cmd/kwokctl)
  step "building the Kubernetes family and etcd (module hack/tools/kube, group $group)"
  rm -f "$bin/server"
  (cd "$tools/kube" && "${build[@]}" -ldflags "$ldflags" -o "$bin/" "${mains[@]}")
  # go build names a main package after the element before a major-version
  # suffix, so etcd's server lands as bin/server.
  mv -f "$bin/server" "$bin/etcd"
  # The module ships its CRDs as plain YAML in deploy/crds. Only the
  # cert-manager.io group is copied: the ACME controllers are not built.
  step "copying cert-manager's CRDs ($cm_version)"
  rm -rf "$bin/cert-manager-crds"
  mkdir -p "$bin/cert-manager-crds"
  for c in "${cert_manager_crds[@]}"; do
    # install -m: the module cache's files are read-only, the copies need not be.
    install -m 0644 "$cm_dir/deploy/crds/cert-manager.io_$c.yaml" "$bin/cert-manager-crds/"
  done
}

build_lint() {
  step "building golangci-lint and govulncheck (module hack/tools/lint)"
  (cd "$tools/lint" && "${build[@]}" -ldflags "-s -w" -o "$bin/" \
    github.com/golangci/golangci-lint/v2/cmd/golangci-lint golang.org/x/vuln/cmd/govulncheck)
}

mkdir -p "$bin"
for group in "${groups[@]}"; do
  # One build of a module at a time (kube and test share one): make
  # test-all's low-priority lint build and a devstack may ask at once.
  exec {lock}>"$bin/.tools-${group/test/kube}.lock"
  flock "$lock"
  stamp="$bin/.tools-stamp-$group"
  want="$(want_stamp "$group")"
  if [[ $force == false ]] && all_present "$group" && [[ -f "$stamp" ]] && [[ "$(cat "$stamp")" == "$want" ]]; then
    echo "tools: $group up to date in $bin"
  else
    rm -f "$stamp"
    "build_$group"
    all_present "$group" || { echo "tools: the $group build left a binary out" >&2; exit 1; }
    echo "$want" >"$stamp"
    [[ $group == kube ]] && echo "$want" >"$bin/.tools-stamp-test"
    step "$group done"
  fi
  exec {lock}>&-
done
