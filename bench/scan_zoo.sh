#!/bin/bash
# Scans every zoo subject with its manifest; prints a Markdown row per subject (docs/SCAN.md).
# Usage: bench/scan_zoo.sh [GRIST_BINARY]   (default build/grist; export the zoo first)
root=$(cd "$(dirname "$0")/.." && pwd)
grist=$(realpath "${1:-$root/build/grist}")
cd "$root"
echo "| subject | expected op's verdict | other may-fail (at the initial weights / once trained) | proved for N steps | proved for every run | propagated | unbounded ops | scan ms |"
echo "|---|---|---|---|---|---|---|---|"
for d in $(ls -d zoo/*/ | sort -V); do
  s=$(basename $d); [ -f $d/model.onnx ] || continue
  exp=$(awk '/^\[expect\]/{f=1} f&&/^op *=/{gsub(/"/,"",$3); print $3; exit}' $d/manifest.toml)
  (cd $d && "$grist" scan model.onnx --manifest manifest.toml --json > /tmp/scan_$s.json 2>/tmp/scan_$s.err)
  /usr/bin/python3 - "$s" "$exp" <<'PY'
import json,sys
s,exp=sys.argv[1],sys.argv[2]
try: j=json.load(open(f"/tmp/scan_{s}.json"))
except Exception: print(f"| {s} | {exp}: ERROR: {open(f'/tmp/scan_{s}.err').read().strip()} |"); sys.exit()
hz=j["hazards"]
def label(h):
    if h["verdict"]=="may fail": return "may fail" if h.get("fails_at_initial_weights",True) else "may fail once trained"
    if h["verdict"]=="propagated only": return "propagated only"
    if h.get("scope")=="first N steps": return f"safe {'≥' if h.get('safe_steps_at_least') else ''}{h['safe_steps']} steps"
    return "PROVED SAFE"
mine=[h for h in hz if h["op_type"]==exp]
order=["may fail","may fail once trained","propagated only"]
best=sorted(mine,key=lambda h:(order.index(label(h)) if label(h) in order else 3, -h.get("safe_steps",0)))
verdict=f"{exp}: {label(best[0])}" if best else f"{exp}: no hazard site"
rest=[h for h in hz if not best or h is not best[0]]
mf=[h for h in rest if h["verdict"]=="may fail"]
at_init=sum(1 for h in mf if h.get("fails_at_initial_weights",True))
steps=sorted(h["safe_steps"] for h in hz if h["verdict"]=="proved safe" and h.get("scope")=="first N steps")
every=sum(1 for h in hz if h["verdict"]=="proved safe" and h.get("scope") in ("every run","stated weight ranges"))
st=", ".join(str(n) for n in steps) if steps else "-"
print(f"| {s} | {verdict} | {at_init} / {len(mf)-at_init} | {st} | {every} | {j['summary']['propagated_only']} | {len(j['unbounded_nodes'])} | {j['seconds']*1e3:.1f} |")
PY
done
