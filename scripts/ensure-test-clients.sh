#!/usr/bin/env bash
# The clients others wrote that our users run, for the test suite (installed only when missing):
#   - Debian's python3-kubernetes, the official Python client, run with Debian's /usr/bin/python3;
#   - Debian's kubernetes-client (kubectl 1.20), unpacked into .tools/kubectl-1.20/ with apt-get download and
#     dpkg -x, so that it does not replace the kubectl in .tools/bin (1.33, from npm).
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || {
    echo "the test clients need Debian packages and this user cannot install them: run 'apt-get install python3-kubernetes' as root." >&2
    exit 1
  }
  SUDO="sudo"
fi
updated=""
apt_update() {
  [ -n "$updated" ] || $SUDO apt-get update -qq
  updated=1
}

if ! /usr/bin/python3 -c 'import kubernetes' >/dev/null 2>&1; then
  echo "Installing the Python Kubernetes client (Debian package python3-kubernetes)..."
  apt_update
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-kubernetes >/dev/null
fi

OLD_KUBECTL=.tools/kubectl-1.20/usr/bin/kubectl
if [ ! -x "$OLD_KUBECTL" ]; then
  echo "Unpacking kubectl 1.20 (Debian package kubernetes-client) into .tools/kubectl-1.20..."
  apt_update
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  # apt's sandbox user cannot write into a private temp dir; the download itself is checked by apt as usual.
  chmod 755 "$work"
  (cd "$work" && apt-get download -qq kubernetes-client 2>/dev/null)
  rm -rf .tools/kubectl-1.20
  mkdir -p .tools/kubectl-1.20
  dpkg -x "$work"/kubernetes-client_*.deb .tools/kubectl-1.20
fi
"$OLD_KUBECTL" version --client --short 2>/dev/null | head -n 1
