#!/usr/bin/env bash
# Runs every check and every test: typecheck, lint, formatting, build, packaging (publint,
# attw), a short fuzz run, then the whole vitest suite. Every step runs even when an earlier one
# fails; the exit code is non-zero if any did. The last line is the test summary: "N passed, N failed".
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
source "$(dirname "${BASH_SOURCE[0]}")/system-packages.sh"

failed_steps=()
step() {
  local name=$1
  shift
  echo "› $name" >&2
  if ! "$@"; then failed_steps+=("$name"); fi
}

step typecheck pnpm -s typecheck
step lint pnpm -s exec eslint .
step format pnpm -s exec prettier --check . --log-level warn
# A changeset that bumps a library the CLI bundles must bump `packwarden` too (the check tests
# itself on fixtures first).
step changesets sh -c 'node scripts/check-changesets.mjs --self-test && node scripts/check-changesets.mjs'
step build pnpm -s build
step packaging pnpm -s check:packaging
# The packages as consumers install them: packed tarballs in a fresh project outside the
# workspace, every entry point typechecked (skipLibCheck off) and run, every README ts block.
step consumer node scripts/consumer-check.mjs --no-build
# A short fuzz run of every parser (fuzz/run.mjs): saved regressions first, then a seeded
# time-boxed run per target. The README's "Fuzzing" section has the longer run.
step fuzz node fuzz/run.mjs --budget-ms "${PACKWARDEN_FUZZ_BUDGET_MS:-4000}" --seed "${PACKWARDEN_FUZZ_SEED:-20261201}"

report=.vitest-report.json
rm -f "$report"
echo "› tests" >&2
vitest_status=0
pnpm -s exec vitest run --reporter=default --reporter=json --outputFile.json="$report" || vitest_status=$?

summary=$(node -e '
  const fs = require("fs");
  let passed = 0, failed = 0;
  try {
    const r = JSON.parse(fs.readFileSync(process.argv[1], "utf8"));
    passed = r.numPassedTests; failed = r.numFailedTests + (r.numRuntimeErrorTestSuites ?? 0);
    if (!r.success && failed === 0) failed = 1;
  } catch { failed = 1; }
  console.log(`${passed} passed, ${failed} failed`);
' "$report")

if [ ${#failed_steps[@]} -gt 0 ]; then echo "failed checks: ${failed_steps[*]}" >&2; fi
echo "$summary"
if [ ${#failed_steps[@]} -gt 0 ] || [ "$vitest_status" -ne 0 ]; then exit 1; fi
case "$summary" in "0 passed, "*) echo "no test ran" >&2; exit 1 ;; esac
