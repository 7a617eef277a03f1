# Sourced by scripts/test.sh and scripts/demo.sh: makes `pnpm` available (the pinned version,
# through npx when it is not installed) and installs the workspace's dependencies when needed.
# Needs only Node.js >= 20.19 and npm.
set -euo pipefail

PNPM_VERSION=10.34.8
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo_root"

node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$node_major" -lt 20 ]; then
  echo "packwarden needs Node.js 20.19 or newer (found: $(node --version 2>/dev/null || echo none))" >&2
  exit 1
fi

# Without the pinned pnpm on PATH, put a shim there that runs it through npx: tools started by
# the scripts (publint packs with `pnpm pack`) need a `pnpm` command too.
if ! command -v pnpm >/dev/null 2>&1 || [ "$(pnpm --version 2>/dev/null)" != "$PNPM_VERSION" ]; then
  shim_dir="$repo_root/.tmp/bin"
  mkdir -p "$shim_dir"
  printf '#!/bin/sh\nexec npx -y pnpm@%s "$@"\n' "$PNPM_VERSION" >"$shim_dir/pnpm"
  chmod +x "$shim_dir/pnpm"
  export PATH="$shim_dir:$PATH"
fi

# Install when node_modules is missing or older than the lockfile.
if [ ! -f node_modules/.modules.yaml ] || [ pnpm-lock.yaml -nt node_modules/.modules.yaml ]; then
  echo "› installing dependencies (pnpm $PNPM_VERSION, frozen lockfile)" >&2
  CI=true pnpm install --frozen-lockfile --reporter=append-only >&2
fi
