# Sourced by scripts/test.sh and scripts/demo.sh: the Debian packages that the tests and the demo
# run for real: bubblewrap (confinement of pack code), docker-registry (Debian's build of the
# CNCF distribution registry, for the OCI store tests), apache2-utils (htpasswd, for the
# registry's basic-auth tests) and openssl (a certificate for the https registry tests). Installs
# what is missing when it can (root with apt-get) and says clearly what it could not install; the tests that need a missing package then fail with a
# message naming it, they are never skipped.
packwarden_system_packages() {
  local want=() missing=() pkg cmd
  for pair in bubblewrap:bwrap docker-registry:docker-registry apache2-utils:htpasswd openssl:openssl; do
    pkg=${pair%%:*}
    cmd=${pair#*:}
    command -v "$cmd" >/dev/null 2>&1 || want+=("$pkg")
  done
  [ ${#want[@]} -eq 0 ] && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "› installing system packages: ${want[*]} (apt-get)" >&2
    if ! { DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${want[@]}" >&2; }; then
      echo "  apt-get could not install: ${want[*]}" >&2
    fi
  fi
  for pair in bubblewrap:bwrap docker-registry:docker-registry apache2-utils:htpasswd openssl:openssl; do
    command -v "${pair#*:}" >/dev/null 2>&1 || missing+=("${pair%%:*}")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "!! missing system packages: ${missing[*]}. Install them (Debian/Ubuntu: apt-get install ${missing[*]})." >&2
    echo "!! the tests that need them will fail and say so." >&2
  fi
  return 0
}
packwarden_system_packages
