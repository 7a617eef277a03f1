#!/usr/bin/env bash
# The script behind action.yml: installs packwarden (unless PACKWARDEN_BIN names one), runs
# `packwarden pack verify --all` with the trust root from the inputs, and hands the JSON report to
# report.mjs, which prints one log line per pack, an annotation per refusal, a job summary table
# and the step outputs. Exits with packwarden's exit code. Runs anywhere with bash, Node.js and
# npm (tested locally, see apps/cli/test/action.test.ts).
#
# Nothing from a pack reaches the log unescaped: packwarden's stdout is the JSON report (read by
# report.mjs, never printed), its stderr is printed by report.mjs escaped line by line, and the
# only values this script echoes itself are checked inputs (apps/cli/README.md "GitHub Action").
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
packs_dir=${INPUT_PACKS_DIR:-.}
work=${RUNNER_TEMP:-$(mktemp -d)}
report="$work/packwarden-verify.json"
stderr_log="$work/packwarden-verify.stderr"

# The runner's own escaping for the data of a workflow command: an input echoed in an error must
# not end the line and start a command of its own.
command_data() {
  local value=${1//%/%25}
  value=${value//$'\r'/%0D}
  value=${value//$'\n'/%0A}
  printf '%s' "$value"
}

fail_usage() {
  echo "::error title=packwarden::$(command_data "$1")"
  exit 2
}

# Sets the variable named $1 from a true/false input ($2 its name, $3 its value), spelled as
# require-signed accepts it; anything else is a usage error. Not a $(…): exit in a subshell would
# end only the subshell.
read_boolean() {
  case "$3" in
    true | TRUE | True | 1 | yes) printf -v "$1" true ;;
    false | FALSE | False | 0 | no) printf -v "$1" false ;;
    *) fail_usage "$2 must be true or false, not '$3'" ;;
  esac
}

# Every input is checked before anything is installed or run.
args=(pack verify --all "$packs_dir" --json)
[ -n "${INPUT_KEYS:-}" ] && args+=(--keys "$INPUT_KEYS")
[ -n "${INPUT_JWKS_URL:-}" ] && args+=(--jwks "$INPUT_JWKS_URL")
[ -n "${INPUT_LEASE_URL:-}" ] && args+=(--lease-url "$INPUT_LEASE_URL")
pins=0
if [ -n "${INPUT_PINS:-}" ]; then
  while IFS= read -r pin; do
    pin=$(printf '%s' "$pin" | tr -d '[:space:]')
    [ -n "$pin" ] && args+=(--pin "$pin") && pins=$((pins + 1))
  done < <(printf '%s\n' "$INPUT_PINS" | tr ',' '\n')
  # Pins that pin nothing (" , ") are a mistake, never "no pins" (trust-root's own rule).
  [ "$pins" -gt 0 ] || fail_usage "pins names no thumbprint; give at least one RFC 7638 thumbprint"
fi
# A JWKS URL without pins trusts whatever the URL serves. Pins often come from a secret, which
# GitHub leaves empty for pull requests from forks: an empty pins input then must not quietly
# mean "unpinned". Unpinned is a choice the workflow states (jwks-unpinned: true).
read_boolean jwks_unpinned jwks-unpinned "${INPUT_JWKS_UNPINNED:-false}"
if [ -n "${INPUT_JWKS_URL:-}" ] && [ "$pins" -eq 0 ] && [ "$jwks_unpinned" = false ]; then
  fail_usage "jwks-url is given without pins (an empty secret, on a pull request from a fork?): give pins, or set jwks-unpinned: true to trust every key the URL serves"
fi
case "${INPUT_REQUIRE_SIGNED:-true}" in
  true | TRUE | True | 1 | yes) args+=(--require-signed) ;;
  false | FALSE | False | 0 | no | '') ;;
  *) fail_usage "require-signed must be true or false, not '${INPUT_REQUIRE_SIGNED}'" ;;
esac

# The keys file decides which signatures count. Inside the checkout, the pull request under test
# can change it as easily as a pack: add its own key, then sign its change with it. So a keys file
# in the checkout (by its path or where its links lead) is refused unless the workflow says that
# file is protected (keys-in-checkout: true, e.g. CODEOWNERS review or runs on trusted refs only).
read_boolean keys_in_checkout keys-in-checkout "${INPUT_KEYS_IN_CHECKOUT:-false}"
# Node, not realpath(1): macOS runners' realpath has no -m or -s.
keys_where() {
  node -e '
    const { isAbsolute, relative, resolve, sep } = require("node:path");
    const { realpathSync } = require("node:fs");
    const real = (p) => { try { return realpathSync.native(p); } catch { return resolve(p); } };
    const inside = (a, b) => { const r = relative(b, a); return r === "" || (r !== ".." && !r.startsWith(".." + sep) && !isAbsolute(r)); };
    const [keys, checkout] = process.argv.slice(1);
    const found = [resolve(keys), real(keys)].some((k) => [resolve(checkout), real(checkout)].some((c) => inside(k, c)));
    console.log(found ? "inside" : "outside");
  ' "$1" "$2"
}
# Anything but a plain "outside" (node failing included) counts as inside: fail closed.
if [ -n "${INPUT_KEYS:-}" ] && [ -n "${GITHUB_WORKSPACE:-}" ] && [ "$keys_in_checkout" = false ] &&
  [ "$(keys_where "$INPUT_KEYS" "$GITHUB_WORKSPACE" || true)" != outside ]; then
  fail_usage "the keys file $INPUT_KEYS is inside the checkout ($GITHUB_WORKSPACE), which the pull request under test can change: it could add its own key and sign its change with it. Give the keys from outside the checkout (a secret or variable written to \$RUNNER_TEMP, or jwks-url with pins), or set keys-in-checkout: true if that file is protected (CODEOWNERS review, or a workflow that runs only on trusted refs)"
fi

if [ -n "${PACKWARDEN_BIN:-}" ]; then
  read -r -a packwarden <<<"$PACKWARDEN_BIN"
else
  # The default is the packwarden release this action was tagged with: the version in the CLI's
  # package.json of the action's own checkout ($GITHUB_ACTION_PATH is the repository at the tag
  # the workflow names). Never a dist-tag such as `latest`: the code that runs must be the code
  # that was reviewed with this action.
  version=${INPUT_PACKWARDEN_VERSION:-}
  if [ -z "$version" ]; then
    manifest="$here/../apps/cli/package.json"
    [ -f "$manifest" ] || fail_usage "cannot find the CLI's package.json next to the action ($manifest): set packwarden-version"
    version=$(node -p 'require(process.argv[1]).version' "$manifest")
  fi
  # An exact version only: no ranges, tags, URLs, git or file specs npm would also accept.
  if ! [[ "$version" =~ ^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
    fail_usage "packwarden-version must be an exact version such as 1.2.3, not '$version'"
  fi
  echo "Installing packwarden@$version (install scripts disabled)"
  # --ignore-scripts: no lifecycle script of packwarden or of anything it pulls in runs.
  npm install --no-save --no-audit --no-fund --ignore-scripts --no-package-lock \
    --prefix "$work/packwarden" "packwarden@$version" >&2
  installed=$(node -p 'require(process.argv[1]).version' "$work/packwarden/node_modules/packwarden/package.json")
  [ "$installed" = "$version" ] || fail_usage "npm installed packwarden $installed, not $version"
  packwarden=("$work/packwarden/node_modules/.bin/packwarden")
fi

status=0
"${packwarden[@]}" "${args[@]}" >"$report" 2>"$stderr_log" || status=$?

report_status=0
node "$here/report.mjs" "$report" "$stderr_log" || report_status=$?

# packwarden's own code wins; a report that could not be read fails the step even after exit 0.
if [ "$status" -ne 0 ]; then exit "$status"; fi
exit "$report_status"
