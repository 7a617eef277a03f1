#!/usr/bin/env bash
# A throwaway local OCI registry for the demo, benches and manual tries: Debian's docker-registry
# (the CNCF distribution registry, 2.8) on 127.0.0.1, no auth, storage in a folder of your choice.
#
#   scripts/registry.sh start DIR [PORT]   # prints 127.0.0.1:PORT; config, storage, log and pid in DIR
#   scripts/registry.sh stop DIR
#
# Then: packwarden store push ./pack oci://127.0.0.1:PORT/packs/NAME --plain-http
# The tests in packages/store-client/test/oci start their own registries (also with htpasswd and
# token auth); this script is for people and scripts. Install: apt-get install docker-registry.
set -euo pipefail

bin=${PACKWARDEN_DOCKER_REGISTRY:-/usr/bin/docker-registry}
cmd=${1:-}
dir=${2:-}
if [ -z "$cmd" ] || [ -z "$dir" ]; then
  echo "usage: scripts/registry.sh start DIR [PORT] | stop DIR" >&2
  exit 2
fi

case "$cmd" in
  start)
    if [ ! -x "$bin" ]; then
      echo "!! $bin is missing: apt-get install docker-registry (or set PACKWARDEN_DOCKER_REGISTRY)" >&2
      exit 1
    fi
    mkdir -p "$dir/storage"
    dir=$(cd "$dir" && pwd)
    if [ -f "$dir/registry.pid" ] && kill -0 "$(cat "$dir/registry.pid")" 2>/dev/null; then
      echo "!! a registry started from $dir is already running (pid $(cat "$dir/registry.pid"))" >&2
      exit 1
    fi
    port=${3:-$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')}
    cat >"$dir/config.yml" <<EOF
version: 0.1
log:
  level: warn
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $dir/storage
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
EOF
    "$bin" serve "$dir/config.yml" >"$dir/registry.log" 2>&1 &
    echo $! >"$dir/registry.pid"
    # Ready when /v2/ answers; give up (and say why) after 15 s or if the registry exits.
    for _ in $(seq 1 300); do
      if ! kill -0 "$(cat "$dir/registry.pid")" 2>/dev/null; then
        echo "!! docker-registry exited; its log:" >&2
        cat "$dir/registry.log" >&2
        exit 1
      fi
      if node -e 'fetch(process.argv[1]).then(()=>process.exit(0),()=>process.exit(1))' "http://127.0.0.1:$port/v2/" 2>/dev/null; then
        echo "127.0.0.1:$port"
        exit 0
      fi
      sleep 0.05
    done
    echo "!! docker-registry did not answer on 127.0.0.1:$port within 15 s; its log: $dir/registry.log" >&2
    kill "$(cat "$dir/registry.pid")" 2>/dev/null || true
    exit 1
    ;;
  stop)
    if [ -f "$dir/registry.pid" ]; then
      pid=$(cat "$dir/registry.pid")
      kill "$pid" 2>/dev/null || true
      rm -f "$dir/registry.pid"
    fi
    ;;
  *)
    echo "usage: scripts/registry.sh start DIR [PORT] | stop DIR" >&2
    exit 2
    ;;
esac
