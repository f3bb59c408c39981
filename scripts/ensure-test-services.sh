#!/usr/bin/env bash
# The test suite needs PostgreSQL and Redis. When none answers on the usual ports (or at the
# GAUNTLET_TEST_* URLs), tests/services.py starts private instances from the server binaries:
# this script installs those binaries with apt-get when they are missing. It changes nothing
# on a machine where the services already run.
set -euo pipefail

port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

need=()
if [ -z "${GAUNTLET_TEST_DATABASE_URL:-}" ] && ! port_open 5432; then
  ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || need+=(postgresql)
fi
if [ -z "${GAUNTLET_TEST_REDIS_URL:-}" ] && ! port_open 6379; then
  command -v redis-server >/dev/null 2>&1 || need+=(redis-server)
fi
if [ ${#need[@]} -gt 0 ]; then
  echo "installing ${need[*]} for the test suite" >&2
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi
