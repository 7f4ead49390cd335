# SPDX-License-Identifier: Apache-2.0
"""Train the learned cost model of one device class and export it (sparseport-trees-1 JSON).

  .venv-model/bin/python scheduler/model/train.py --data '.corpus/*.jsonl' --device-class cuda-sm90 \
      --out scheduler/models/cuda-sm90.json --report /tmp/cuda-sm90.md

Per (op, variant): a small LightGBM regressor of y = log2(ms / floor_ms) on the "f:" inputs; per
(op, mapping): a "family:MAPPING" model over all variants of that mapping (the fallback for a variant
the file has no model of). Held-out evaluation by graph (GroupKFold) and leave-one-family-out; the
per-op confidence margin and pairwise sigma come from the GroupKFold predictions. Records of family
"real" are never trained on: they are evaluated separately with the final models.
See scheduler/model/README.md.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import sys
import time

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common as C  # noqa: E402


def parse():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="+", required=True, help="JSON-lines files or globs (quote globs)")
    ap.add_argument("--device-class", required=True)
    ap.add_argument("--out", required=True, help="the model JSON (scheduler/models/<class>.json)")
    ap.add_argument("--report", help="a markdown report of the held-out evaluation")
    ap.add_argument("--trees", type=int, default=300, help="boosting rounds per model, at most (default 300)")
    ap.add_argument("--leaves", type=int, default=7, help="num_leaves (default 7)")
    ap.add_argument("--lr", type=float, default=0.08, help="learning rate (default 0.08)")
    ap.add_argument("--objective", default="regression", choices=["regression", "huber", "l1"],
                    help="LightGBM objective (default regression = L2; huber: alpha 1 log2 unit)")
    ap.add_argument("--folds", type=int, default=5, help="GroupKFold folds over graphs (default 5)")
    ap.add_argument("--threads", type=int, default=1, help="LightGBM threads (default 1)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--max-bytes", type=int, default=1_900_000, help="export size budget (default 1.9 MB)")
    ap.add_argument("--top-k", type=int, default=3, help="candidates the scheduler times when not confident")
    ap.add_argument("--no-lofo", action="store_true", help="skip leave-one-family-out")
    ap.add_argument("--full-precision", action="store_true", help="do not round floats to 7 significant digits")
    ap.add_argument("--keep-ops", metavar="MODEL",
                    help="copy into the output the ops these records have none of, from MODEL (a model of the same "
                         "device class and inputs): one op retrained alone, the others kept as they were")
    ap.add_argument("--keep-variants", metavar="MODEL",
                    help="for the ops these records train, keep MODEL's variant models, margin and sigma, and add "
                         "only the variants MODEL has no model of (a vendor collected later, beside variants "
                         "trained on another corpus)")
    return ap.parse_args()


# ------------------------------------------------------------------------------------------------


def fit_kw(args, rounds=None):
    return dict(threads=args.threads, seed=args.seed, rounds=rounds or args.trees, num_leaves=args.leaves, lr=args.lr,
                objective=args.objective)


def export(models, data, train_idx, args, full_precision=False):
    """The ops' "variants" dicts, verified against booster.predict on the training rows."""
    sorted_values = [sorted(set(data.X[:, j].tolist())) for j in range(data.X.shape[1])]
    out = {}
    worst = 0.0
    for (op, name), m in sorted(models.items()):
        entry = C.export_model(m)
        rows = train_idx[(data.op[train_idx] == op) &
                         ((data.variant[train_idx] == name) |
                          (np.array(["family:" + x for x in data.mapping[train_idx]], dtype=object) == name))]
        X = data.X[rows]
        ref = m.predict(X)
        got = C.eval_rows(entry, X)
        err = float(np.max(np.abs(got - ref))) if len(X) else 0.0
        assert err <= 1e-9, f"export of {op}/{name} differs from booster.predict by {err}"
        if not full_precision:
            r = C.round_entry(entry, sorted_values)
            err_r = float(np.max(np.abs(C.eval_rows(r, X) - ref))) if len(X) else 0.0
            if err_r <= 1e-6:
                entry = r
                err = err_r
            else:
                C.log(f"  {op}/{name}: rounding would err by {err_r:.2g}; kept full precision")
        worst = max(worst, err)
        out.setdefault(op, {})[name] = entry
    return out, worst


def build_json(variants, margins, sigmas, data, train_idx, args):
    fams = sorted(set(data.family[train_idx]))
    doc = {
        "format": C.FORMAT,
        "device_class": args.device_class,
        "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "trained_on": (f"{len(train_idx)} records, {len(set(data.graph[train_idx]))} graphs, "
                       f"families {', '.join(fams)}"),
        "features": data.features,
        "ops": {},
    }
    for op in sorted(variants):
        # An op without held-out problems of two or more variants (a single variant on this device,
        # or too few graphs) has no calibrated margin: NEVER_MARGIN, the model never decides alone
        # (the file may be used for another device class by transfer, where the op has several).
        m = margins.get(op)
        m = C.NEVER_MARGIN if m is None else math.ceil(max(m, C.MIN_MARGIN) * 1e4) / 1e4
        doc["ops"][op] = {"margin": m,
                          "sigma": round(sigmas.get(op, 0.0), 4),
                          "variants": variants[op]}
    if getattr(args, "kept_variants", None):
        doc["trained_on"] += f"; {args.kept_variants}"
    kept = args.kept
    if kept:
        doc["ops"].update(kept["ops"])
        doc["ops"] = dict(sorted(doc["ops"].items()))
        doc["trained_on"] += f"; {', '.join(sorted(kept['ops']))} kept from {kept['from']}"
    return doc


def load_same_inputs(path, flag, args, data):
    """The model file `path` (given with `flag`). The trees name their inputs by position in the
    file's "features" list, so that list must be this training's: a model trained on other inputs
    is refused, naming the difference."""
    with open(path) as fh:
        old = json.load(fh)
    if old.get("device_class") != args.device_class:
        raise SystemExit(f"{flag}: {path} is of device class {old.get('device_class')}, not {args.device_class}")
    if old.get("features") != data.features:
        gone = sorted(set(old.get("features", [])) - set(data.features))
        new = sorted(set(data.features) - set(old.get("features", [])))
        raise SystemExit(f"{flag}: {path} has other inputs than these records "
                         f"(only there: {gone or 'none'}; only here: {new or 'none'}; or another order)")
    return old


def keep_ops(args, data):
    """--keep-ops: the ops of args.keep_ops that these records have none of, and where they came from."""
    old = load_same_inputs(args.keep_ops, "--keep-ops", args, data)
    trained = set(data.op.tolist())
    ops = {op: v for op, v in old["ops"].items() if op not in trained}
    return {"ops": ops, "from": f"{os.path.basename(args.keep_ops)} ({old.get('created')}: {old.get('trained_on')})"}


def keep_variants(args, data, variants, margins, sigmas):
    """--keep-variants: for every op trained here that args.keep_variants has, its variant models,
    margin and sigma replace this training's, and only the variants it lacks are added from here.
    Why: a margin decides when the model picks alone, and it comes from the held-out errors of the
    variants that compete; a vendor far behind them (GraphBLAS on the CPU, 6.4x the best native on
    the s43 corpus) changes none of the picks, only the evidence the full-size check weighs, so
    adding its trees should not also retrain the natives on a corpus of other noise. Returns the
    (op, variant) models kept from the file in place of this training's."""
    old = load_same_inputs(args.keep_variants, "--keep-variants", args, data)
    added, replaced = [], set()
    for op in sorted(variants):
        if op not in old["ops"]:
            continue
        merged = dict(old["ops"][op]["variants"])
        replaced |= {(op, name) for name in merged}
        for name, entry in sorted(variants[op].items()):
            if name not in merged:
                merged[name] = entry
                added.append(f"{op}/{name}")
        variants[op] = dict(sorted(merged.items()))
        margins[op] = old["ops"][op]["margin"]
        sigmas[op] = old["ops"][op]["sigma"]
    args.kept_variants = (f"{', '.join(added) or 'nothing'} added to the other models, margins and sigmas of "
                          f"{os.path.basename(args.keep_variants)} ({old.get('created')}: {old.get('trained_on')})")
    return replaced


def crossval(data, idx, splits, args, rounds, candidates):
    """Held-out predictions for idx over the given (train, test) splits (indices into data): for each
    candidate round count k (<= rounds; the first k trees of models trained `rounds` rounds), and the
    family models alone at the largest k."""
    pred = {k: np.full(len(data), np.nan) for k in candidates}
    fam_pred = np.full(len(data), np.nan)
    for tr, te in splits:
        models = C.train_models(data, tr, **fit_kw(args, rounds))
        for k in candidates:
            for m in models.values():
                m.rounds = min(k, rounds)
            pred[k][te], _ = C.predict(models, data, te)
        fam_pred[te], _ = C.predict(models, data, te, family_only=True)
    return {k: p[idx] for k, p in pred.items()}, fam_pred[idx]


def group_splits(data, idx, folds):
    from sklearn.model_selection import GroupKFold

    graphs = data.graph[idx]
    k = min(folds, len(set(graphs)))
    if k < 2:
        return []
    return [(idx[a], idx[b]) for a, b in GroupKFold(n_splits=k).split(idx, groups=graphs)]


def lofo_splits(data, idx):
    fams = sorted(set(data.family[idx]))
    if len(fams) < 2:
        return []
    return [(f, idx[data.family[idx] != f], idx[data.family[idx] == f]) for f in fams]


# ------------------------------------------------------------------------------------------------
# Report


def table(summaries: dict, title_col="op", policy=True) -> list[str]:
    head = (f"| {title_col} | problems | within 5% | geomean chosen/best | worst | sigma | margin | confident | "
            f"confident within 5% | policy geomean | policy within 5% | old estimate geomean (within 5%) | "
            f"vendor geomean (within 5%) |")
    lines = [head, "|" + "|".join(["---"] * (head.count("|") - 1)) + "|"]
    for k, s in summaries.items():
        if not s.get("n"):
            continue
        lines.append(
            f"| {k} | {s['n']} | {C.fmt(100 * s['within5'], '.1f')}% | {C.fmt(s['gmean'])} | {C.fmt(s['worst'], '.2f')} | "
            f"{C.fmt(s['sigma'])} | {C.fmt(s['margin'], '.3f')} | {C.fmt(100 * s['confident'], '.1f')}% | "
            f"{C.fmt(100 * s['confident_within5'], '.1f')}% | {C.fmt(s['policy_gmean'])} | "
            f"{C.fmt(100 * s['policy_within5'], '.1f')}% | {C.fmt(s['est_gmean'])} ({C.fmt(100 * s['est_within5'], '.0f')}%) | "
            f"{C.fmt(s['vendor_gmean'])} ({C.fmt(100 * s['vendor_within5'], '.0f')}%) |")
    return lines


def short_table(summaries: dict, title_col) -> list[str]:
    lines = [f"| {title_col} | problems | within 5% | geomean chosen/best | worst | sigma | old estimate geomean | "
             f"vendor geomean |", "|---|---|---|---|---|---|---|---|"]
    for k, s in summaries.items():
        if not s.get("n"):
            continue
        lines.append(f"| {k} | {s['n']} | {C.fmt(100 * s['within5'], '.1f')}% | {C.fmt(s['gmean'])} | "
                     f"{C.fmt(s['worst'], '.2f')} | {C.fmt(s['sigma'])} | {C.fmt(s['est_gmean'])} | "
                     f"{C.fmt(s['vendor_gmean'])} |")
    return lines


def summarize_ops(rows, top_k, margins=None):
    out = {op: C.summarize(r, top_k, None if margins is None else margins.get(op, C.NEVER_MARGIN))
           for op, r in C.by_op(rows).items()}
    if rows:
        out["all"] = C.summarize(rows, top_k) if margins is None else _all_with_margins(rows, top_k, margins)
    return out


def _all_with_margins(rows, top_k, margins):
    # the policy over all ops with each op's own margin
    s = C.summarize(rows, top_k, margin=0.0)
    ratio = np.array([r["ratio"] for r in rows])
    topk = np.array([r["ratio_rank"][:top_k].min() for r in rows])
    sel = np.array([r["gap"] > margins.get(r["op"], C.NEVER_MARGIN) for r in rows])
    policy = np.where(sel, ratio, topk)
    s["margin"] = float("nan")
    s["confident"] = float(sel.mean())
    s["confident_within5"] = float((ratio[sel] <= C.WITHIN).mean()) if sel.any() else float("nan")
    s["policy_gmean"] = C.gmean(policy)
    s["policy_within5"] = float(np.mean(policy <= C.WITHIN))
    return s


# ------------------------------------------------------------------------------------------------


def main():
    args = parse()
    t0 = time.time()
    recs, stats, files = C.load_records(args.data, args.device_class)
    if not recs:
        raise SystemExit(f"no usable records of device class {args.device_class} in {files}")
    data = C.Data(recs, C.feature_names(recs))
    C.log(f"{len(files)} files, {data.describe()} ({stats})")
    if data.missing:
        C.log(f"warning: {data.missing} missing inputs taken as 0")
    args.kept = keep_ops(args, data) if args.keep_ops else None
    if args.kept:
        C.log(f"--keep-ops: {', '.join(sorted(args.kept['ops'])) or 'nothing'} kept from {args.keep_ops}")
    train_idx = np.where(~data.real)[0]
    real_idx = np.where(data.real)[0]
    if len(train_idx) == 0:
        raise SystemExit("no training records (all are of family 'real')")

    # 1. Final models on everything that is not "real"; fit the export into the size budget by
    # keeping the first k trees of every model (the same as training k rounds: no early stopping,
    # deterministic).
    models = C.train_models(data, train_idx, **fit_kw(args))
    rounds = args.trees
    while True:
        for m in models.values():
            m.truncate(rounds)
        variants, err = export(models, data, train_idx, args, args.full_precision)
        size = len(C.dumps_compact(build_json(variants, {}, {}, data, train_idx, args)))
        if size <= args.max_bytes or rounds <= 10:
            break
        rounds = max(10, int(rounds * args.max_bytes / size * 0.95))
        C.log(f"export {size} bytes > {args.max_bytes}: keeping {rounds} trees per model")
    C.log(f"final models: {len(models)} ({rounds} rounds), max |json - booster| = {err:.2g}, "
          f"{time.time() - t0:.0f}s")

    # 2. Held-out: GroupKFold over graphs. The number of trees: the candidate (at most the size
    # budget's) with the smallest held-out pairwise sigma.
    splits = group_splits(data, train_idx, args.folds)
    rows_cv, rows_fam, sweep = [], [], []
    if splits:
        cands = sorted({rounds} | {k for k in (10, 25, 50, 100, 150, 200, 300) if k < rounds})
        preds, fam_pred = crossval(data, train_idx, splits, args, rounds, cands)
        best = None
        for k in cands:
            rows = C.per_problem(data, train_idx, preds[k])
            s_ = C.summarize(rows, args.top_k) if rows else {"n": 0}
            sweep.append((k, s_))
            if rows and (best is None or s_["sigma"] < best[1] - 1e-4):
                best = (k, s_["sigma"], rows)
        if best is not None:
            rounds, _, rows_cv = best
        else:
            rows_cv = []
        rows_fam = C.per_problem(data, train_idx, fam_pred)
        for m in models.values():
            m.truncate(rounds)
        variants, err = export(models, data, train_idx, args, args.full_precision)
    swept = ", ".join(f"{k}: sigma {C.fmt(s_.get('sigma'))}" for k, s_ in sweep)
    C.log(f"GroupKFold ({len(splits)} folds) done: {rounds} trees per model (sweep {swept}), "
          f"{time.time() - t0:.0f}s")
    cv = summarize_ops(rows_cv, args.top_k)
    margins = {op: s["margin"] for op, s in cv.items() if op != "all" and s.get("n")}
    sigmas = {op: s["sigma"] for op, s in cv.items() if op != "all" and s.get("n")}
    cv["all"] = _all_with_margins(rows_cv, args.top_k, margins) if rows_cv else {"n": 0}
    fam = summarize_ops(rows_fam, args.top_k, margins)

    # Leave one family out.
    lofo = {}
    if not args.no_lofo:
        for f, tr, te in lofo_splits(data, train_idx):
            models_f = C.train_models(data, tr, **fit_kw(args, rounds))
            p, _ = C.predict(models_f, data, te)
            rows = C.per_problem(data, te, p)
            for op, r in C.by_op(rows).items():
                lofo[f"{f} / {op}"] = C.summarize(r, args.top_k, margins.get(op, C.NEVER_MARGIN))
            if rows:
                lofo[f"{f} / all"] = _all_with_margins(rows, args.top_k, margins)
        C.log(f"leave-one-family-out done, {time.time() - t0:.0f}s")

    # Real records: the final models, never trained on them.
    real = {}
    if len(real_idx):
        p, src = C.predict(models, data, real_idx)
        rows_real = C.per_problem(data, real_idx, p)
        real = summarize_ops(rows_real, args.top_k, margins)

    # 3-4. Export.
    written = {key for key in models}
    if args.keep_variants:
        written -= keep_variants(args, data, variants, margins, sigmas)
        C.log(f"--keep-variants: {args.kept_variants}")
    doc = build_json(variants, margins, sigmas, data, train_idx, args)
    text = C.dumps_compact(doc)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as fh:
        fh.write(text + "\n")
    # Re-read and re-check what was written.
    with open(args.out) as fh:
        back = json.load(fh)
    worst = 0.0
    for (op, name), m in models.items():
        if (op, name) not in written:  # a model kept from --keep-variants's file, not this booster
            continue
        sel = train_idx[data.op[train_idx] == op][:200]
        worst = max(worst, float(np.max(np.abs(C.eval_rows(back["ops"][op]["variants"][name], data.X[sel]) -
                                               m.predict(data.X[sel])))))
    assert worst <= 1e-6, worst
    ntrees = sum(len(v["trees"]) for o in doc["ops"].values() for v in o["variants"].values())
    C.log(f"wrote {args.out}: {len(text) + 1} bytes, {len(written)} models of this training, {ntrees} trees, "
          f"max |file - booster| = {worst:.2g}")

    for op, s in cv.items():
        if s.get("n"):
            C.log(f"  {op:15s} n={s['n']:5d} within5={100 * s['within5']:.1f}% gmean={s['gmean']:.3f} "
                  f"worst={s['worst']:.2f} sigma={s['sigma']:.3f} margin={C.fmt(s['margin'])} "
                  f"confident={100 * s['confident']:.0f}%")

    if args.report:
        L = [f"# Learned cost model: {args.device_class}", "",
             f"Data: {', '.join(files)}; {data.describe()}.", "",
             f"Trained on (not 'real'): {data.describe(train_idx)}. {len(models)} models, {rounds} trees at most "
             f"(num_leaves {args.leaves}, learning rate {args.lr}), export {len(text) + 1} bytes "
             f"(max |file - booster.predict| {worst:.2g}).", "",
             "Columns: *within 5%*: problems where the model's argmin is within 5% of the measured best; "
             "*geomean chosen/best*, *worst*: t(chosen)/t(best); *sigma*: RMS of (pred_a - pred_b) - (y_a - y_b) "
             "over variant pairs of a problem (log2); *margin*: the smallest gap pred(2nd) - pred(1st) above which "
             f"the model alone is within 5% on >= 97% of held-out problems; *confident*: problems above it; "
             f"*policy*: model alone when confident, else the best measured of the top {args.top_k}; "
             "*old estimate*: argmin of the hand-written estimate; *vendor*: always the vendor variant. "
             "Problems with a single measured variant are left out.", ""]
        if getattr(args, "kept_variants", None):
            L += [f"The file written holds {args.kept_variants}: the held-out scores below are this training's "
                  "own models, not those kept.", ""]
        L += [f"## Held out by graph (GroupKFold, {len(splits)} folds)", ""]
        L += table(cv)
        if sweep:
            L += ["", "Trees per model (first k trees; held out, all ops): " +
                  "; ".join(f"{k}: sigma {s_['sigma']:.3f}, within 5% {100 * s_['within5']:.1f}%, "
                            f"geomean {s_['gmean']:.3f}" for k, s_ in sweep if s_.get("n")) +
                  f". Exported: {rounds}."]
        L += ["", "Family models alone (the fallback for a variant without its own model), same folds, "
                  "margins from above:", ""]
        L += short_table(fam, "op")
        if lofo:
            L += ["", "## Leave one family out (margins from GroupKFold)", ""]
            L += table(lofo, "family / op")
        L += ["", "## Real matrices (evaluation only; final models; margins from GroupKFold)", ""]
        if real:
            L += ["'model alone' = *within 5%* / *geomean chosen/best*; 'oracle' = 1.000 by definition; the policy "
                  "columns are model + timing of the top candidates when not confident.", ""]
            L += table(real)
        else:
            L += ["No records of family 'real'."]
        with open(args.report, "w") as fh:
            fh.write("\n".join(L) + "\n")
        C.log(f"wrote {args.report}")
    C.log(f"done in {time.time() - t0:.0f}s")


if __name__ == "__main__":
    main()
