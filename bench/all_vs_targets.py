#!/usr/bin/python3
"""`grist hunt --all` against one hunt per hazard (--target K), on manifests whose every hazard is hunted.

For each manifest: the hazards found (by the node that produced the trigger, with its class) and the seconds
in all, for `--all` with each binary given, and for the union of one `--target` hunt per hazard (first binary).
Usage: bench/all_vs_targets.py SECONDS MANIFEST[,MANIFEST...] OLD_GRIST NEW_GRIST
"""
import json
import subprocess
import sys
import time


def hunt(binary, manifest, seconds, extra):
    cmd = [binary, "hunt", manifest, "--time-limit", f"{seconds}s", "--json", "--no-witness", "-q", *extra]
    t0 = time.monotonic()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.monotonic() - t0
    if p.returncode not in (0, 1):
        raise RuntimeError(f"{' '.join(cmd)}: {p.stderr.strip()}")
    hazards, found = [], {}
    for line in p.stdout.splitlines():
        e = json.loads(line)
        if e.get("event") == "hazards":
            hazards = [h["id"] for h in e["hazards"]]
        elif e.get("event") == "outcome" and e.get("triggered"):
            site = e.get("fired_hazard") or e.get("hazard")
            found.setdefault(site, e.get("class", "?"))
    return hazards, found, wall


def short(found):
    letter = {"input-reached": "I", "training-reached": "T", "weights-perturbed": "W"}
    return " ".join(f"#{k}{letter.get(v, '?')}" for k, v in sorted(found.items())) or "-"


def main():
    seconds, manifests, old, new = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3], sys.argv[4]
    print("| manifest | hazards | --all before: found, s | --all now: found, s | one per hazard: union, s |")
    print("|---|---|---|---|---|")
    for m in manifests:
        hazards, found_old, s_old = hunt(old, m, seconds, ["--all"])
        _, found_new, s_new = hunt(new, m, seconds, ["--all"])
        union, s_union = {}, 0.0
        for k in hazards:
            _, f, s = hunt(old, m, seconds, ["--target", str(k)])
            s_union += s
            for site, c in f.items():
                rank = ["input-reached", "training-reached", "weights-perturbed"]
                if site not in union or rank.index(c) < rank.index(union[site]):
                    union[site] = c
        print(f"| {m} | {len(hazards)} | {short(found_old)}, {s_old:.1f} | {short(found_new)}, {s_new:.1f} | "
              f"{short(union)}, {s_union:.1f} |", flush=True)


if __name__ == "__main__":
    main()
