#!/usr/bin/env bash
# Makes sure etcd and etcdctl are on PATH, installing Debian's etcd-server and etcd-client packages when they are
# not. The server needs etcd (its embedded default); restoring a snapshot needs etcdctl
# (docs/operating.md, "Backup and restore"), and so do the tests that prove it.
set -euo pipefail
missing=()
command -v etcd >/dev/null 2>&1 || missing+=(etcd-server)
command -v etcdctl >/dev/null 2>&1 || missing+=(etcd-client)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
  echo "${missing[*]} not installed and this user cannot install them: run 'apt-get install ${missing[*]}' as root." >&2
  exit 1
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "Installing ${missing[*]} (Debian)..."
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
# The package may start a system etcd on 2379; the server runs its own, so stop that one if it did.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  $SUDO systemctl stop etcd || true
fi
etcd --version | head -n 1
ETCDCTL_API=3 etcdctl version | head -n 1
