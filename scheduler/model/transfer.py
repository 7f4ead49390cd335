# SPDX-License-Identifier: Apache-2.0
"""Few-shot transfer of a learned cost model to another device class (COGNATE-style: reuse the
source model's input mapping, correct it with a few target measurements).

  .venv-model/bin/python scheduler/model/transfer.py --source scheduler/models/openmp-x86_64.json \
      --data '.corpus/*.jsonl' --device-class cuda-sm90 [--report /tmp/transfer.md]

Prediction of a target record: the source file's model of the same (op, variant) if it has one,
else its "family:<mapping>" model of that op, else none: the problem is then ranked by the
hand-written estimate, as scheduler/select.cpp does (--fallback op-mean: the mean of the op's family
models instead). Correction with measurements M (each one (problem, variant) full-size time;
residual r = y - pred, y = log2(ms / floor_ms)), per op:

    rbar = mean of r over the op's measurements in M (0 when there are none)
    b_v  = (sum of r over the measurements of variant v + lambda * rbar) / (n_v + lambda),  lambda = 2
    pred'(v) = pred(v) + b_v

Evaluation: repetitions (seeded) of a random order of the target problems; the measurements are all
variants of the first N problems (--unit problems, default) or N random (problem, variant) pairs
(--unit measurements); the scored problems are the rest (those after the first max(N) problems, the
same for every N of a repetition). Metrics: fraction of the oracle's speed = geomean over problems of
t(best)/t(chosen); the within-5% rate. Records of family "real" are never measured; they are scored
separately.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
from collections import defaultdict

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as C  # noqa: E402


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--source", required=True, help="a model JSON (sparseport-trees-1)")
    ap.add_argument("--data", nargs="+", required=True, help="target records (JSON lines; globs)")
    ap.add_argument("--device-class", required=True, help="the target device class")
    ap.add_argument("--ns", type=int, nargs="+", default=[0, 1, 2, 3, 5, 10, 20])
    ap.add_argument("--unit", choices=["problems", "measurements", "both"], default="both")
    ap.add_argument("--reps", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lam", type=float, default=2.0, help="lambda (default 2)")
    ap.add_argument("--fallback", choices=["estimate", "op-mean"], default="estimate",
                    help="a variant with neither its own nor its family's model: its problem ranks by the "
                         "hand-written estimate (as select.cpp does; default), or the mean of the op's family models")
    ap.add_argument("--prior", choices=["source", "estimate"], default="source",
                    help="what the correction starts from: the source model (default) or, for comparison, "
                         "the target's hand-written estimate (log2(estimate_ms / floor_ms))")
    ap.add_argument("--center", action="store_true",
                    help="alternative correction: residuals centred per measured problem (see corrected())")
    ap.add_argument("--report", help="write the markdown here (also printed)")
    return ap.parse_args()


def source_predict(doc, data, fallback):
    """Zero-shot predictions of every target record from the source file; and the model used. A
    record with neither its variant's model nor its family's gets NaN (fallback "estimate": as in
    scheduler/select.cpp, its problem is then ranked by the hand-written estimate) or the mean of
    the op's family models (fallback "op-mean")."""
    pred = np.zeros(len(data))
    used = np.empty(len(data), dtype=object)
    cache = {}
    for i in range(len(data)):
        op, v, m = data.op[i], data.variant[i], data.mapping[i]
        ops = doc["ops"].get(op)
        x = data.X[i]
        if ops is None:
            pred[i], used[i] = np.nan, "none"
        elif v in ops["variants"]:
            pred[i], used[i] = C.eval_variant(ops["variants"][v], x), "variant"
        elif "family:" + m in ops["variants"]:
            pred[i], used[i] = C.eval_variant(ops["variants"]["family:" + m], x), "family"
        elif fallback == "op-mean":
            fams = cache.setdefault(op, [e for k, e in ops["variants"].items() if k.startswith("family:")])
            pred[i] = float(np.mean([C.eval_variant(e, x) for e in fams])) if fams else 0.0
            used[i] = "op mean"
        else:
            pred[i], used[i] = np.nan, "none"
    return pred, used


def corrected(data, pred, resid, meas, lam, center=False):
    """pred + b_v for every record, b_v from the measurement records `meas` (indices). center: the
    alternative (--center) that first subtracts from each residual the mean residual of the measured
    variants of its problem (only relative errors count; rbar is then 0)."""
    meas = np.asarray(meas, dtype=int)
    meas = meas[~np.isnan(resid[meas])]
    r = resid[meas].astype(float).copy()
    if center and len(meas):
        pm = defaultdict(list)
        for k, i in enumerate(meas):
            pm[data.pid[i]].append(k)
        for ks in pm.values():
            r[ks] -= r[ks].mean()
    s, n = defaultdict(float), defaultdict(int)
    so, no = defaultdict(float), defaultdict(int)  # per op: rbar is the mean over the op's measurements
    for k, i in enumerate(meas):
        key = (data.op[i], data.variant[i])
        s[key] += r[k]
        n[key] += 1
        so[data.op[i]] += r[k]
        no[data.op[i]] += 1
    rbar = {o: so[o] / no[o] for o in so}
    b = np.array([(s[(o, v)] + lam * rbar.get(o, 0.0)) / (n[(o, v)] + lam) for o, v in zip(data.op, data.variant)])
    return with_fallback(data, pred + b)


def with_fallback(data, p):
    """Problems with an unpredicted variant (NaN) are ranked by the hand-written estimate."""
    bad = np.isnan(p)
    if bad.any():
        p = p.copy()
        badp = np.isin(data.pid, np.unique(data.pid[bad]))
        p[badp] = np.log2(data.est[badp] / data.floor[badp])
    return p


def metrics(rows):
    if not rows:
        return None
    ratio = np.array([r["ratio"] for r in rows])
    return {"oracle": 1.0 / C.gmean(ratio), "within5": float(np.mean(ratio <= C.WITHIN)), "n": len(rows),
            "est": 1.0 / C.gmean([r["est_ratio"] for r in rows]),
            "vendor": 1.0 / C.gmean([r["vendor_ratio"] for r in rows])}


def run(data, pred, resid, pool_problems, probs, args, unit):
    """{N: {"all"|op: [metrics per repetition]}, "meas": [...], "nprob": [...]}"""
    rng = np.random.default_rng(args.seed)
    nmax = max(args.ns)
    out = {N: defaultdict(list) for N in args.ns}
    for rep in range(args.reps):
        perm = rng.permutation(pool_problems)
        if unit == "problems":
            fixed_eval = perm[nmax:] if len(perm) > nmax + 5 else None
            for N in args.ns:
                meas_p = perm[:N]
                meas = np.concatenate([probs[p] for p in meas_p]) if N else np.array([], dtype=int)
                ev = fixed_eval if fixed_eval is not None else perm[N:]
                record(out[N], data, pred, resid, meas, ev, probs, args, len(meas_p))
        else:
            # N random (problem, variant) pairs among the records of all pool problems.
            allrec = np.concatenate([probs[p] for p in perm])
            order = rng.permutation(allrec)
            for N in args.ns:
                meas = order[:N]
                touched = set(data.pid[meas].tolist())
                ev = np.array([p for p in perm if p not in touched])
                record(out[N], data, pred, resid, meas, ev, probs, args, len(touched))
    return out


def record(slot, data, pred, resid, meas, eval_problems, probs, args, nprob):
    p = corrected(data, pred, resid, meas, args.lam, args.center)
    ev = np.concatenate([probs[q] for q in eval_problems]) if len(eval_problems) else np.array([], dtype=int)
    rows = C.per_problem(data, ev, p[ev])
    slot["meas"].append(len(meas))
    slot["nprob"].append(nprob)
    m = metrics(rows)
    if m:
        slot["all"].append(m)
    for op, r in C.by_op(rows).items():
        slot[op].append(metrics(r))


def table(out, ops, unit):
    head = ["N " + unit, "measurements", "problems measured", "all: oracle speed", "all: within 5%"]
    for op in ops:
        head += [f"{op}: oracle", f"{op}: within 5%"]
    L = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for N, slot in out.items():
        cells = [str(N), f"{np.mean(slot['meas']):.1f}", f"{np.mean(slot['nprob']):.1f}"]
        for k in ["all"] + list(ops):
            ms = slot.get(k, [])
            if not ms:
                cells += ["-", "-"]
                continue
            o = np.array([m["oracle"] for m in ms])
            w = np.array([m["within5"] for m in ms])
            cells += [f"{o.mean():.3f} (min {o.min():.3f})", f"{100 * w.mean():.1f}%"]
        L.append("| " + " | ".join(cells) + " |")
    return L


def main():
    args = parse()
    with open(args.source) as fh:
        doc = json.load(fh)
    if doc.get("format") != C.FORMAT:
        raise SystemExit(f"{args.source}: not {C.FORMAT}")
    recs, stats, files = C.load_records(args.data, args.device_class)
    if not recs:
        raise SystemExit(f"no records of {args.device_class}")
    data = C.Data(recs, doc["features"])  # the source's input columns, 0 for one the target lacks
    pred, used = source_predict(doc, data, args.fallback)
    if args.prior == "estimate":
        # Comparison: the hand-written estimate of the target as the prior, corrected the same way.
        pred = np.log2(data.est / data.floor)
        pred[~np.isfinite(pred)] = np.nan
    resid = data.y - pred  # NaN for unpredicted variants: such measurements are not used
    probs = C.problems_of(data, np.arange(len(data)))
    pool = np.array(sorted(p for p, r in probs.items() if not data.real[r[0]]))
    real = np.array(sorted(p for p, r in probs.items() if data.real[r[0]]))
    ops = sorted(set(data.op))

    L = [f"# Transfer {doc['device_class']} -> {args.device_class}", "",
         f"Source: {args.source} ({doc.get('trained_on', '')}). Target: {', '.join(files)}; {data.describe()}. "
         f"lambda = {args.lam}, {args.reps} repetitions (seed {args.seed})"
         f"{', residuals centred per problem (--center)' if args.center else ''}"
         f"{'; PRIOR = the hand-written estimate, not the source model (--prior estimate)' if args.prior == 'estimate' else ''}"
         f"{'; fallback: mean of the op family models (--fallback op-mean)' if args.fallback == 'op-mean' else ''}.", ""]
    cnt = defaultdict(int)
    for o, v, u in zip(data.op, data.variant, used):
        cnt[(o, v, u)] += 1
    L += ["Source model used per target variant (zero-shot): " +
          "; ".join(f"{v}: {u}" for (o, v, u) in sorted(cnt)) + ".", ""]
    vpp = np.mean([len(r) for r in probs.values()])
    L += [f"Target problems: {len(pool)} for measurement/scoring, {len(real)} 'real' (scored only); "
          f"{vpp:.1f} variants per problem on average (one fully measured problem = that many measurements).", ""]
    ev_all = np.concatenate([probs[p] for p in pool]) if len(pool) else np.array([], dtype=int)
    base = metrics(C.per_problem(data, ev_all, np.log2(data.est[ev_all] / data.floor[ev_all])))
    if base:
        L += [f"Baselines on all {base['n']} target problems: old hand-written estimate reaches "
              f"{base['oracle']:.3f} of the oracle's speed ({100 * base['within5']:.1f}% within 5%); always-vendor "
              f"{C.fmt(base['vendor'])}.", ""]
    units = ["problems", "measurements"] if args.unit == "both" else [args.unit]
    for unit in units:
        out = run(data, pred, resid, pool, probs, args, unit)
        L += [f"## N = {unit}", ""]
        L += table(out, ops, unit)
        L += [""]
    if len(real):
        # Real problems: corrected with N non-real problems, scored on all real problems.
        L += ["## 'real' problems (measurements from N non-real problems, mean over repetitions)", "",
              "| N problems | oracle speed | within 5% |", "|---|---|---|"]
        rng = np.random.default_rng(args.seed)
        ev = np.concatenate([probs[p] for p in real])
        for N in args.ns:
            o, w = [], []
            for _ in range(args.reps):
                mp = rng.permutation(pool)[:N]
                meas = np.concatenate([probs[p] for p in mp]) if N else np.array([], dtype=int)
                p = corrected(data, pred, resid, meas, args.lam, args.center)
                m = metrics(C.per_problem(data, ev, p[ev]))
                if m:
                    o.append(m["oracle"])
                    w.append(m["within5"])
            if o:
                L.append(f"| {N} | {np.mean(o):.3f} | {100 * np.mean(w):.1f}% |")
        L += [""]
    text = "\n".join(L) + "\n"
    print(text)
    if args.report:
        with open(args.report, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
