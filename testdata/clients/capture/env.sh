# Sourced by capture-all.sh and sse-matrix.sh: paths, versions, a clean env, a demo project.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
OUT=${OUT:-$here/..}
W=${CAPTURE_WORK:-/tmp/capture-work}
URL=http://127.0.0.1:${REC_PORT:-8787}
pkg() { # <package>: its package.json, looked up the way node looks up packages from this folder
  (cd "$here" && node -p "require.resolve.paths('$1').map(d => d + '/$1/package.json').find(f => require('fs').existsSync(f))")
}
bin=$(dirname "$(dirname "$(dirname "$(pkg @anthropic-ai/claude-code)")")")/.bin
ver() { echo "$1@$(node -p "require('$(pkg "$1")').version")"; }

rm -rf "$W" && mkdir -p "$W/home" "$W/codex-home" "$W/tmp" "$W/demo"
(cd "$W/demo" && git init -q && echo "hello from demo" > notes.txt && git add notes.txt &&
  git -c user.name=demo -c user.email=demo@example.com commit -qm init)
clean=(env -i PATH="$bin:/usr/local/bin:/usr/bin:/bin" HOME="$W/home" TERM=xterm TMPDIR="$W/tmp")
