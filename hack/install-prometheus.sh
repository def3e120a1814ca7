#!/usr/bin/env bash
# Installs the Prometheus server the collector tests run against: Debian's
# package (a real server; the tests start it themselves on loopback with a
# generated configuration, never as a service). Does nothing when a
# prometheus binary is already on the PATH or WVA_PROMETHEUS names one.
set -euo pipefail
if [ -n "${WVA_PROMETHEUS:-}" ] || command -v prometheus >/dev/null 2>&1; then
	exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then
	SUDO=sudo
fi
echo "installing Debian's prometheus package for the collector tests"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends prometheus >/dev/null
command -v prometheus
