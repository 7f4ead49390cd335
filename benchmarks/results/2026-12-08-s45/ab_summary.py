#!/usr/bin/env python3
"""Medians (min-max) per graph and arm of features-ab.sh's CSV: python3 ab_summary.py FILE.csv"""
import csv
import statistics as st
import sys

rows = list(csv.DictReader(open(sys.argv[1])))
for g in sorted({r["graph"] for r in rows}):
    for F in sorted({r["F"] for r in rows}, key=int):
        out = []
        for arm in ("old", "new"):
            sel = [r for r in rows if r["graph"] == g and r["F"] == F and r["arm"] == arm and r["features_ms"]]
            if not sel:
                continue
            f = [float(r["features_ms"]) for r in sel]
            d = [float(r["decision_ms"]) for r in sel]
            out.append(f"{arm} features {st.median(f):.2f} ({min(f):.2f}-{max(f):.2f}), decision {st.median(d):.2f}")
        print(f"{g} F={F}: " + " | ".join(out))
