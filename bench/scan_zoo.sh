#!/bin/bash
# Scans every zoo subject with its manifest; prints a Markdown row per subject (docs/SCAN.md).
# Usage: bench/scan_zoo.sh [GRIST_BINARY]   (default build/grist; export the zoo first)
root=$(cd "$(dirname "$0")/.." && pwd)
grist=$(realpath "${1:-$root/build/grist}")
cd "$root"
echo "| subject | expected op | flagged | other may-fail | proved safe | propagated | unbounded ops | scan ms |"
echo "|---|---|---|---|---|---|---|---|"
for d in zoo/*/; do
  s=$(basename $d); [ -f $d/model.onnx ] || continue
  exp=$(awk '/^\[expect\]/{f=1} f&&/^op *=/{gsub(/"/,"",$3); print $3; exit}' $d/manifest.toml)
  (cd $d && "$grist" scan model.onnx --manifest manifest.toml --json > /tmp/scan_$s.json 2>/tmp/scan_$s.err)
  /usr/bin/python3 - "$s" "$exp" <<'PY'
import json,sys
s,exp=sys.argv[1],sys.argv[2]
try: j=json.load(open(f"/tmp/scan_{s}.json"))
except Exception: print(f"| {s} | {exp} | ERROR: {open(f'/tmp/scan_{s}.err').read().strip()} |"); sys.exit()
hz=j["hazards"]; mf=[h for h in hz if h["verdict"]=="may fail"]
hit=[h for h in mf if h["op_type"]==exp] or [h for h in hz if h["op_type"]==exp and h["verdict"]=="propagated only"]
flag="yes" if hit else ("no hazard site" if not any(h["op_type"]==exp for h in hz) else "NO")
other=len(mf)-(1 if [h for h in mf if h["op_type"]==exp] else 0)
print(f"| {s} | {exp} | {flag} | {other} | {j['summary']['proved_safe']} | {j['summary']['propagated_only']} | {len(j['unbounded_nodes'])} | {j['seconds']*1e3:.1f} |")
PY
done
