# Sourced before the README's quick-start commands by readme-quickstart.test.ts.
# Stand-ins for the two commands a test cannot run as a user does: `npm ci` (the suite runs
# on a built tree already) and `npm start`, which here starts the built server in the
# background on the test's port and data directory, stopping the one before (the README's
# Ctrl-C), and keeps the token its banner prints. `npx strongroom` runs the built CLI.

set -euo pipefail
QS_N=0
qs_start() {
  if [ -n "${QS_PID:-}" ]; then kill -INT "$QS_PID"; wait "$QS_PID" || true; fi
  QS_N=$((QS_N + 1))
  local log="$QS_WORK/server.$QS_N.log"
  node "$QS_CLI" server --listen "127.0.0.1:$QS_PORT" --data-dir "$QS_WORK/data" "$@" > "$log" 2>&1 &
  QS_PID=$!
  for _ in $(seq 1 600); do
    grep -q 'serving at' "$log" && break
    kill -0 "$QS_PID" 2> /dev/null || { cat "$log" >&2; return 1; }
    command sleep 0.1
  done
  grep -q 'serving at' "$log" || { cat "$log" >&2; return 1; }
  { grep -oE 'sr\.[1-9A-Za-z]{40}' "$log" || true; } | head -n 1 >> "$QS_WORK/token"
}
npm() {
  case "$1" in
    ci) ;;
    start) shift; [ "${1:-}" = "--" ] && shift; qs_start "$@" ;;
    *) echo "unexpected: npm $*" >&2; return 1 ;;
  esac
}
npx() {
  [ "$1" = strongroom ] || { echo "unexpected: npx $*" >&2; return 1; }
  shift
  node "$QS_CLI" "$@"
}
# The README waits in loops (`for … sleep 1 …`); however those are bounded, after this many
# waits in all the run stops with a failure instead of waiting on a step that broke.
QS_SLEEPS=0
sleep() {
  QS_SLEEPS=$((QS_SLEEPS + 1))
  [ "$QS_SLEEPS" -le 60 ] || { echo "the quick start waited $QS_SLEEPS times; a step before it failed" >&2; exit 1; }
  command sleep "$@"
}
trap '[ -n "${QS_PID:-}" ] && kill -INT "$QS_PID" && wait "$QS_PID"' EXIT
