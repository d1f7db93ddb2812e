# Shared by the command-line test scripts (sourced): counters and the `expect` check.
passed=0
failed=0

# expect NAME STATUS PATTERN -- COMMAND...: the command exits with STATUS and its output matches PATTERN.
# Every command runs under a 60 s timeout, so a hang fails the test instead of blocking it.
expect() {
  local name=$1 status=$2 pattern=$3
  shift 4
  local out rc
  out=$(timeout 60 "$@" 2>&1)
  rc=$?
  if [ "$rc" -ne "$status" ] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: $name (exit $rc, want $status; want output matching /$pattern/)"
    echo "$out" | head -20 | sed 's/^/    /'
    failed=$((failed + 1))
  else
    passed=$((passed + 1))
  fi
}
pass() { passed=$((passed + 1)); }
fail_with() { echo "FAIL: $1"; failed=$((failed + 1)); }
