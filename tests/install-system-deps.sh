#!/usr/bin/env bash
# Installs the Debian packages the end-to-end tests start, when they are
# missing: PostgreSQL (the grant store suites start their own server with
# initdb + pg_ctl), promtool (package `prometheus`: a metrics scrape is
# validated with it), and Chromium + ChromeDriver (the consent page is driven
# in headless Chromium over WebDriver). tests/run.sh calls this first, so the
# README's test command works on a fresh machine; .ci/run calls tests/run.sh.
#
# Root runs apt-get directly; another user needs passwordless sudo. Where
# neither works, the script names what is missing and the variables that skip
# those tests (TOOLFORGE_SKIP_POSTGRES=1, TOOLFORGE_SKIP_BROWSER=1) and fails.
# TOOLFORGE_SKIP_SYSTEM_DEPS=1 skips this script altogether.
set -euo pipefail

missing=()
if ! command -v initdb >/dev/null 2>&1 && ! compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null \
  && [ "${TOOLFORGE_SKIP_POSTGRES:-}" != 1 ]; then
  missing+=(postgresql)
fi
if ! command -v promtool >/dev/null 2>&1; then
  missing+=(prometheus)
fi
if { [ ! -x /usr/bin/chromium ] || [ ! -x /usr/bin/chromedriver ]; } && [ "${TOOLFORGE_SKIP_BROWSER:-}" != 1 ]; then
  missing+=(chromium chromium-driver)
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" = 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  as_root=(sudo -n)
else
  cat >&2 <<MSG
tests/install-system-deps.sh: these Debian packages are missing and this user
cannot install them (not root, no passwordless sudo): ${missing[*]}
Install them (apt-get install ${missing[*]}), or skip the tests that need them:
  TOOLFORGE_SKIP_POSTGRES=1 (postgresql), TOOLFORGE_SKIP_BROWSER=1 (chromium),
  TOOLFORGE_SKIP_SYSTEM_DEPS=1 (skip this check; the promtool test then says SKIPPED).
MSG
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "tests/install-system-deps.sh: no apt-get here; install ${missing[*]} by hand or see the TOOLFORGE_SKIP_* variables in the README" >&2
  exit 1
fi
echo "== apt-get install ${missing[*]} (for the end-to-end tests)"
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
