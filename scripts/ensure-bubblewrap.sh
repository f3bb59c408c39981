#!/usr/bin/env bash
# The scorer sandbox starts every plugin process through bubblewrap (`bwrap`), and the tests
# check that it does: this script installs it with apt-get when it is missing. It changes
# nothing on a machine that has it. Without it, the sandbox tests fail (they never skip).
set -euo pipefail

if command -v bwrap >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "bubblewrap (bwrap) is missing and apt-get is not available: install bubblewrap by" \
       "hand; the scorer sandbox tests fail until then" >&2
  exit 1
fi
echo "installing bubblewrap for the scorer sandbox" >&2
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  bubblewrap >/dev/null
command -v bwrap >/dev/null
