#!/usr/bin/env bash
# The end-to-end demo: builds the packwarden CLI and runs it on the example pack.
source "$(dirname "${BASH_SOURCE[0]}")/bootstrap.sh"
source "$(dirname "${BASH_SOURCE[0]}")/system-packages.sh"
echo "› building the packwarden CLI" >&2
pnpm -s --filter packwarden build >/dev/null
exec node scripts/demo.mjs "$@"
