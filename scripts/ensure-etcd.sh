#!/usr/bin/env bash
# Makes sure an etcd binary is on PATH, installing Debian's etcd-server package when it is not.
set -euo pipefail
if command -v etcd >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ] && ! command -v sudo >/dev/null 2>&1; then
  echo "etcd is not installed and this user cannot install it: run 'apt-get install etcd-server' as root." >&2
  exit 1
fi
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
echo "Installing etcd (Debian package etcd-server)..."
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq etcd-server >/dev/null
# The package may start a system etcd on 2379; the server runs its own, so stop that one if it did.
if command -v systemctl >/dev/null 2>&1 && systemctl is-active --quiet etcd 2>/dev/null; then
  $SUDO systemctl stop etcd || true
fi
etcd --version | head -n 1
