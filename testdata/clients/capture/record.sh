#!/usr/bin/env bash
# Usage: record.sh <out.json> <client@version> <how> -- <command...>
# Starts the recorder on $REC_PORT (default 8787), runs the command, writes the capture.
set -u
out=$1 client=$2 how=$3; shift 4
here=$(cd "$(dirname "$0")" && pwd)
export REC_PORT=${REC_PORT:-8787} REC_OUT=$(mktemp)
node "$here/recorder.mjs" & rec=$!
sleep 0.5
"$@"; rc=$?
kill "$rec"; wait "$rec" 2>/dev/null
node "$here/assemble.mjs" "$REC_OUT" "$client" "$how" > "$out"
rm -f "$REC_OUT"
echo "$out: $(node -e 'console.log(JSON.parse(require("fs").readFileSync(process.argv[1])).exchanges.length)' "$out") exchange(s), client rc=$rc" >&2
