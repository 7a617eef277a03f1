#!/usr/bin/env bash
# The script behind action.yml: installs packwarden (unless PACKWARDEN_BIN names one), runs
# `packwarden pack verify --all` with the trust root from the inputs, and reports to GitHub:
# one log line per pack, an error annotation per refusal, a job summary table and step outputs.
# Exits with packwarden's exit code. Runs anywhere with bash and Node.js (tested locally).
set -euo pipefail

packs_dir=${INPUT_PACKS_DIR:-.}
work=${RUNNER_TEMP:-$(mktemp -d)}
report="$work/packwarden-verify.json"

if [ -n "${PACKWARDEN_BIN:-}" ]; then
  read -r -a packwarden <<<"$PACKWARDEN_BIN"
else
  version=${INPUT_PACKWARDEN_VERSION:-latest}
  echo "Installing packwarden@$version"
  npm install --no-save --no-audit --no-fund --prefix "$work/packwarden" "packwarden@$version" >&2
  packwarden=("$work/packwarden/node_modules/.bin/packwarden")
fi

args=(pack verify --all "$packs_dir" --json)
[ -n "${INPUT_KEYS:-}" ] && args+=(--keys "$INPUT_KEYS")
[ -n "${INPUT_JWKS_URL:-}" ] && args+=(--jwks "$INPUT_JWKS_URL")
[ -n "${INPUT_LEASE_URL:-}" ] && args+=(--lease-url "$INPUT_LEASE_URL")
if [ -n "${INPUT_PINS:-}" ]; then
  while IFS= read -r pin; do
    pin=$(printf '%s' "$pin" | tr -d '[:space:]')
    [ -n "$pin" ] && args+=(--pin "$pin")
  done < <(printf '%s\n' "$INPUT_PINS" | tr ',' '\n')
fi
case "${INPUT_REQUIRE_SIGNED:-true}" in
  true | TRUE | True | 1 | yes) args+=(--require-signed) ;;
  false | FALSE | False | 0 | no | '') ;;
  *) echo "::error title=packwarden::require-signed must be true or false, not '${INPUT_REQUIRE_SIGNED}'"; exit 2 ;;
esac

status=0
"${packwarden[@]}" "${args[@]}" >"$report" || status=$?

# A usage or configuration error prints no report: surface stderr (already shown) and stop.
if [ ! -s "$report" ]; then
  echo "::error title=packwarden verify failed::packwarden exited $status without a report (see the log above)"
  exit "$status"
fi

node - "$report" <<'NODE'
const fs = require('node:fs');
const report = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
// Workflow commands: escape what GitHub would otherwise interpret (%, CR, LF; and , : in properties).
const data = (s) => String(s).replace(/%/g, '%25').replace(/\r/g, '%0D').replace(/\n/g, '%0A');
const prop = (s) => data(s).replace(/:/g, '%3A').replace(/,/g, '%2C');
const md = (s) => String(s).replace(/\|/g, '\\|').replace(/\r?\n/g, ' ');
const rows = [];
for (const pack of report.packs) {
  const r = pack.result;
  const id = r.pack ? `${r.pack}@${r.packVersion}` : pack.relativeDir;
  const detail = pack.refusal ? `${pack.refusal.title}${pack.refusal.detail ? `: ${pack.refusal.detail}` : ''}` : `signed by ${r.kid}`;
  console.log(`${pack.kind.padEnd(22)} ${id}  ${detail}`);
  if (pack.failed) {
    console.log(`::error file=${prop(`${pack.relativeDir}/pack.sig`)},title=${prop(`${pack.kind}: ${id}`)}::${data(`${detail}\nFix: ${pack.refusal?.fix ?? ''}`)}`);
  } else if (pack.kind === 'unsigned') {
    console.log(`::warning file=${prop(`${pack.relativeDir}/agent.yaml`)},title=${prop(`unsigned: ${id}`)}::${data('this pack has no pack.sig')}`);
  }
  rows.push(`| ${pack.failed ? '❌' : pack.kind === 'verified' ? '✅' : '⚠️'} ${pack.kind} | ${md(id)} | \`${md(pack.relativeDir)}\` | ${md(detail)} |`);
}
const { verified, unsigned, failed } = report.summary;
console.log(`verified ${verified}, unsigned ${unsigned}, failed ${failed}`);
if (process.env.GITHUB_STEP_SUMMARY) {
  fs.appendFileSync(
    process.env.GITHUB_STEP_SUMMARY,
    [`### packwarden: verified ${verified}, unsigned ${unsigned}, failed ${failed}`, '', '| result | pack | folder | detail |', '|---|---|---|---|', ...rows, ''].join('\n') + '\n',
  );
}
if (process.env.GITHUB_OUTPUT) {
  fs.appendFileSync(process.env.GITHUB_OUTPUT, `verified=${verified}\nunsigned=${unsigned}\nfailed=${failed}\nreport=${process.argv[2]}\n`);
}
NODE

exit "$status"
