#!/usr/bin/python3
"""Exports every benchmark subject in zoo/ to ONNX, deterministically and cached.

    /usr/bin/python3 zoo/zoo_export.py [--only 2a,14,...] [--force]

Each subject lives in zoo/<id>/ with subject.py (a PyTorch module written from the facts in
SUBJECTS.md, and a build() function) and manifest.toml (how grist hunts it). This script writes, beside them:
  model.onnx        the exported model (not committed; regenerated from subject.py)
  model.onnx.stamp  a hash of subject.py and zoo_common.py: the export is skipped while it matches
  reference.npz     inputs:NAME / outputs:NAME — PyTorch's forward outputs (eval mode, dropout off) on the
                    subject's fixed example data. Committed, so an engine run and its export cannot silently
                    diverge (tests/zoo compares grist's forward pass with it).
Uses Debian's interpreter and torch (python3-torch); install libopenblas0-pthread for speed.
"""
import argparse
import hashlib
import importlib.util
import os
import sys

import numpy as np
import torch

ZOO = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, ZOO)
import zoo_common  # noqa: E402


def subject_ids():
    ids = [d for d in os.listdir(ZOO) if os.path.isfile(os.path.join(ZOO, d, "subject.py"))]
    return sorted(ids, key=lambda s: (int("".join(c for c in s if c.isdigit()) or 0), s))


def stamp_of(subject_dir):
    h = hashlib.sha256()
    for path in (os.path.join(subject_dir, "subject.py"), os.path.join(ZOO, "zoo_common.py")):
        with open(path, "rb") as f:
            h.update(f.read())
    h.update(torch.__version__.encode())
    return h.hexdigest()


def load_subject(subject_id):
    path = os.path.join(ZOO, subject_id, "subject.py")
    spec = importlib.util.spec_from_file_location(f"zoo_subject_{subject_id}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def export_subject(subject_id, force=False):
    subject_dir = os.path.join(ZOO, subject_id)
    onnx_path = os.path.join(subject_dir, "model.onnx")
    stamp_path = onnx_path + ".stamp"
    stamp = stamp_of(subject_dir)
    if not force and os.path.exists(onnx_path) and os.path.exists(stamp_path):
        with open(stamp_path) as f:
            if f.read().strip() == stamp:
                return "cached"
    subject = load_subject(subject_id).build()
    zoo_common.export(subject, onnx_path, os.path.join(subject_dir, "reference.npz"))
    with open(stamp_path, "w") as f:
        f.write(stamp + "\n")
    return "exported"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="comma-separated subject ids")
    parser.add_argument("--force", action="store_true", help="export even when the stamp matches")
    args = parser.parse_args()
    ids = subject_ids()
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in ids]
        if unknown:
            sys.exit(f"zoo_export: no subject {', '.join(unknown)} in {ZOO}")
        ids = wanted
    failed = 0
    for sid in ids:
        try:
            print(f"{sid}: {export_subject(sid, args.force)}", flush=True)
        except Exception as e:  # report every failing subject, then fail
            failed += 1
            print(f"{sid}: FAILED: {e}", file=sys.stderr, flush=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
