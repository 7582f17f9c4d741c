#!/usr/bin/env bash
# Builds kube-apiserver, kube-controller-manager, kubectl and etcd from Go modules into a versioned
# folder, once. No release binary can be downloaded on our machines (no
# internet besides the Go module proxy), so the control plane is compiled.
# Cold: about 14 minutes on 2 cores (813 s measured, downloads included); warm: seconds; already built: instant.
set -euo pipefail

KUBE_VERSION=${KUBE_VERSION:-v1.37.2}
root=$(cd "$(dirname "$0")/.." && pwd)
out=${CONTROL_PLANE_DIR:-$root/bin/control-plane/$KUBE_VERSION}
tools=$root/hack/tools

if [[ -x $out/kube-apiserver && -x $out/kube-controller-manager && -x $out/etcd && -x $out/kubectl ]]; then
  exit 0
fi
mkdir -p "$out"

minor=${KUBE_VERSION#v1.}; minor=${minor%%.*}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION \
 -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor \
 -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION \
 -X k8s.io/client-go/pkg/version.gitMajor=1 -X k8s.io/client-go/pkg/version.gitMinor=$minor"

# One go build for every missing binary: one action graph compiles each
# shared package (client-go, gRPC, etcd's server) once and keeps both cores
# busy through the links. Separate go commands side by side compile the
# packages they share once each, at the same time: Go's build cache has no
# lock across processes for work in progress (measured on a cold machine:
# about 7 CPU-minutes compiled twice when the tools built side by side).
declare -A packages=(
  [etcd]=./etcd
  [kube-apiserver]=k8s.io/kubernetes/cmd/kube-apiserver
  [kube-controller-manager]=k8s.io/kubernetes/cmd/kube-controller-manager
  [kubectl]=k8s.io/kubernetes/cmd/kubectl
)
missing=()
for name in etcd kube-apiserver kube-controller-manager kubectl; do
  [[ -x $out/$name ]] || missing+=("$name")
done
start=$SECONDS
echo "control-plane: building ${missing[*]} $KUBE_VERSION (first time takes minutes) ..."
staging=$(mktemp -d "$out/.build.XXXXXX")
trap 'rm -rf "$staging"' EXIT
pkgs=()
for name in "${missing[@]}"; do pkgs+=("${packages[$name]}"); done
# go build -o <folder>/ names each binary after its package's last element,
# which is the binary's name for all four.
if ! (cd "$tools" && CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$staging/" "${pkgs[@]}"); then
  echo "control-plane: FAILED to build ${missing[*]}; see the go errors above." >&2
  echo "control-plane: the Go module proxy must be reachable; retry with 'make control-plane'." >&2
  exit 1
fi
for name in "${missing[@]}"; do mv "$staging/$name" "$out/$name"; done
echo "control-plane: built ${missing[*]} in $((SECONDS - start)) s -> $out"
