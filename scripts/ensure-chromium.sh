#!/usr/bin/env bash
# The web-UI tests (tests/e2e) drive headless Chromium through Playwright's Python package.
# Playwright's own browser download does not work on every machine, so they use Debian's
# `chromium` package instead: this script installs it with apt-get when it is missing. It
# changes nothing on a machine that has it. Without it, the browser tests fail under `make test`
# and in CI (they skip with the reason elsewhere).
set -euo pipefail

if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "chromium is missing and apt-get is not available: install Chromium by hand;" \
       "the browser tests fail until then" >&2
  exit 0
fi
echo "installing chromium for the browser tests" >&2
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
  chromium fonts-liberation >/dev/null
