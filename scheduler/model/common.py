# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of the learned cost model (scheduler/model/README.md): reading `sparseport tune
--collect` records, the feature matrix, LightGBM training, the sparseport-trees-1 export and its
pure-Python evaluator, and the selection metrics.

Run with the model venv: /work/main/.venv-model/bin/python (numpy, lightgbm, scikit-learn).
"""
from __future__ import annotations

import glob
import gzip
import json
import math
import os
import sys
from bisect import bisect_right
from collections import defaultdict

import numpy as np

FORMAT = "sparseport-trees-1"
OPS = ("spmm", "sddmm", "csr_attention", "segment_reduce", "gather_scatter")
MAPPINGS = ("rows", "balanced", "hub_split", "atomic", "serial", "vendor")
# A problem. The brief's key is (device_class, graph, op, F, reduce, types); device and threads
# are added so that records of two machines of one class, or two thread counts, never merge.
PROBLEM_FIELDS = ("device_class", "device", "threads", "graph", "op", "F", "reduce", "types")
WITHIN = 1.05  # "within 5% of the best"
MIN_MARGIN = 0.001  # log2 units
NEVER_MARGIN = 99.0  # an op's margin when held-out data cannot calibrate one: never alone


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------------
# Records


def mapping_name(variant: str) -> str:
    """scheduler/estimate.cpp mapping_of(): the family of a variant from its stable name."""
    has = lambda s: s in variant  # noqa: E731
    if has("cusparse") or has("graphblas") or has("kokkoskernels"):
        return "vendor"
    if has("serial"):
        return "serial"
    if has("atomic"):
        return "atomic"
    if has("hub_split"):
        return "hub_split"
    if has("nnz_balanced") or has("merge_path") or has("sorted") or has("fused") or has("onepass"):
        return "balanced"
    return "rows"


def expand(patterns) -> list[str]:
    files = []
    for p in patterns:
        hits = sorted(glob.glob(p)) if any(c in p for c in "*?[") else ([p] if os.path.exists(p) else [])
        files += hits
    return sorted(set(files))


def load_records(patterns, device_class: str | None = None):
    """Records of `device_class` (all when None) from JSON-lines files (.gz too); failed runs (ms absent or
    <= 0, floor absent or <= 0) dropped; duplicates of one (problem, variant) merged (median ms)."""
    files = expand(patterns)
    if not files:
        raise SystemExit(f"no input files match {patterns}")
    groups = {}
    order = []
    stats = defaultdict(int)
    for path in files:
        with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as fh:
            for line in fh:
                line = line.strip()
                if not line or line.startswith("#"):
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    stats["unparsable"] += 1
                    continue
                if not isinstance(r, dict) or r.get("schema", 1) != 1:
                    stats["other schema"] += 1
                    continue
                if device_class is not None and r.get("device_class") != device_class:
                    stats["other device class"] += 1
                    continue
                ms, fl = r.get("ms"), r.get("floor_ms")
                if not _pos(ms):
                    stats["failed (no ms)"] += 1
                    continue
                if not _pos(fl):
                    stats["no floor"] += 1
                    continue
                r.setdefault("reduce", "")
                r.setdefault("types", "")
                r.setdefault("threads", 0)
                r.setdefault("device", "")
                if not r.get("family"):
                    g = str(r.get("graph", ""))
                    r["family"] = g.split(":", 1)[0] if ":" in g else "real"
                if not r.get("mapping"):
                    r["mapping"] = mapping_name(r["variant"])
                key = problem_key(r) + (r["variant"],)
                if key in groups:
                    groups[key].append(r)
                    stats["duplicates merged"] += 1
                else:
                    groups[key] = [r]
                    order.append(key)
    recs = []
    for key in order:
        rs = groups[key]
        r = dict(rs[-1])
        if len(rs) > 1:
            r["ms"] = float(np.median([x["ms"] for x in rs]))
        recs.append(r)
    return recs, dict(stats), files


def _pos(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x > 0


def problem_key(r) -> tuple:
    return tuple(r.get(k, "") for k in PROBLEM_FIELDS)


def feature_names(recs) -> list[str]:
    names = set()
    for r in recs:
        names.update(k for k in r if k.startswith("f:"))
    return sorted(names)


class Data:
    """Column view of records: X (features), y = log2(ms / floor_ms), problem ids."""

    def __init__(self, recs, features: list[str]):
        self.recs = recs
        self.features = list(features)
        n, d = len(recs), len(features)
        self.X = np.zeros((n, d), dtype=np.float64)
        missing = 0
        for i, r in enumerate(recs):
            for j, f in enumerate(features):
                v = r.get(f)
                if v is None or not isinstance(v, (int, float)) or not math.isfinite(v):
                    missing += 1
                    v = 0.0
                self.X[i, j] = float(v)
        self.missing = missing  # inputs absent from a record: taken as 0 (as the C++ evaluator does)
        self.ms = np.array([float(r["ms"]) for r in recs])
        self.floor = np.array([float(r["floor_ms"]) for r in recs])
        self.y = np.log2(self.ms / self.floor)
        est = [r.get("estimate_ms") for r in recs]
        self.est = np.array([float(e) if _pos(e) else np.inf for e in est])
        self.op = np.array([r["op"] for r in recs], dtype=object)
        self.variant = np.array([r["variant"] for r in recs], dtype=object)
        self.mapping = np.array([r["mapping"] for r in recs], dtype=object)
        self.graph = np.array([str(r.get("graph", "")) for r in recs], dtype=object)
        self.family = np.array([r["family"] for r in recs], dtype=object)
        self.is_vendor = np.array([bool(r.get("is_vendor", False)) for r in recs])
        keys = {}
        self.pid = np.array([keys.setdefault(problem_key(r), len(keys)) for r in recs])
        self.problem_keys = list(keys)
        self.real = self.family == "real"

    def __len__(self):
        return len(self.recs)

    def describe(self, idx=None) -> str:
        idx = np.arange(len(self)) if idx is None else idx
        fams = sorted(set(self.family[idx]))
        return (f"{len(idx)} records, {len(set(self.graph[idx]))} graphs, {len(set(self.pid[idx]))} problems, "
                f"families {', '.join(fams)}")


# ------------------------------------------------------------------------------------------------
# Training


def lgb_params(n: int, threads: int, seed: int, num_leaves: int, lr: float, objective: str = "regression") -> dict:
    return {
        "objective": objective,  # "regression" (L2), or "huber" (alpha 1: robust to timing outliers)
        "alpha": 1.0,
        "learning_rate": lr,
        "num_leaves": num_leaves,
        # 5..20 rows per leaf, fewer for a variant with few records.
        "min_data_in_leaf": int(max(5, min(20, n // 50))),
        "min_sum_hessian_in_leaf": 1e-3,
        "lambda_l2": 1.0,
        "feature_fraction": 1.0,
        "bagging_fraction": 1.0,
        "deterministic": True,
        "force_col_wise": True,
        "seed": seed,
        "num_threads": threads,
        "verbose": -1,
        "use_missing": False,  # never missing: a leaf path is the "<=" test alone
        "feature_pre_filter": False,
    }


class Model:
    """One regressor: a LightGBM booster (the first `rounds` trees), or a constant when too few rows."""

    MIN_ROWS = 8

    def __init__(self, X, y, *, threads=1, seed=7, rounds=150, num_leaves=15, lr=0.08, objective="regression"):
        import lightgbm as lgb

        self.n = len(y)
        self.const = None
        self.booster = None
        self.rounds = rounds
        if self.n < self.MIN_ROWS or np.ptp(y) == 0:
            self.const = float(np.mean(y)) if self.n else 0.0
            return
        params = lgb_params(self.n, threads, seed, num_leaves, lr, objective)
        ds = lgb.Dataset(X, y, params={"verbose": -1, "feature_pre_filter": False}, free_raw_data=True)
        self.booster = lgb.train(params, ds, num_boost_round=rounds)

    def truncate(self, rounds: int):
        self.rounds = max(1, min(self.rounds, rounds))

    def predict(self, X) -> np.ndarray:
        if self.booster is None:
            return np.full(len(X), self.const)
        return self.booster.predict(X, num_iteration=self.rounds)


def train_models(data: Data, idx, *, families=True, **kw) -> dict:
    """{(op, name): Model} on records idx: one per (op, variant), and one per (op, "family:MAPPING")
    over every variant of that mapping."""
    idx = np.asarray(idx)
    models = {}
    groups = defaultdict(list)
    for i in idx:
        groups[(data.op[i], data.variant[i])].append(i)
        if families:
            groups[(data.op[i], "family:" + data.mapping[i])].append(i)
    for key in sorted(groups):
        rows = np.array(groups[key])
        models[key] = Model(data.X[rows], data.y[rows], **kw)
    return models


def predict(models: dict, data: Data, idx, *, family_only=False):
    """Predictions (log2 of ms/floor) for records idx: the variant's model, else its mapping's family
    model, else the mean of the op's family models. Returns (pred, source) with source per record
    in {"variant", "family", "op"}."""
    idx = np.asarray(idx)
    pred = np.zeros(len(idx))
    source = np.empty(len(idx), dtype=object)
    by = defaultdict(list)
    for k, i in enumerate(idx):
        op, v, m = data.op[i], data.variant[i], data.mapping[i]
        if not family_only and (op, v) in models:
            by[((op, v), "variant")].append(k)
        elif (op, "family:" + m) in models:
            by[((op, "family:" + m), "family")].append(k)
        else:
            by[((op, None), "op")].append(k)
    for (key, src), ks in by.items():
        ks = np.array(ks)
        X = data.X[idx[ks]]
        if src == "op":
            fams = [mk for mk in models if mk[0] == key[0] and mk[1].startswith("family:")]
            pred[ks] = np.mean([models[f].predict(X) for f in fams], axis=0) if fams else 0.0
        else:
            pred[ks] = models[key].predict(X)
        source[ks] = src
    return pred, source


# ------------------------------------------------------------------------------------------------
# Export: LightGBM dump -> parallel arrays; the evaluator; rounding with verification


def convert_tree(struct: dict) -> dict:
    """A LightGBM tree_structure -> {"split","threshold","left","right","value"}, preorder, node 0
    the root. Internal node: x[split] <= threshold goes left. Leaf: split -1, value added."""
    split, thr, left, right, value = [], [], [], [], []

    def visit(node) -> int:
        n = len(split)
        split.append(-1)
        thr.append(0.0)
        left.append(-1)
        right.append(-1)
        value.append(0.0)
        if "leaf_value" in node or "split_feature" not in node:
            value[n] = float(node.get("leaf_value", 0.0))
            return n
        if node.get("decision_type", "<=") != "<=":
            raise ValueError(f"unsupported decision_type {node.get('decision_type')} (categorical split?)")
        if node.get("num_cat", 0):
            raise ValueError("categorical split")
        split[n] = int(node["split_feature"])
        thr[n] = float(node["threshold"])
        left[n] = visit(node["left_child"])
        right[n] = visit(node["right_child"])
        return n

    visit(struct)
    return {"split": split, "threshold": thr, "left": left, "right": right, "value": value}


def export_model(model: Model) -> dict:
    if model.booster is None:
        return {"base": model.const, "trees": []}
    dump = model.booster.dump_model(num_iteration=model.rounds)
    trees = [convert_tree(t["tree_structure"]) for t in dump["tree_info"][: model.rounds]]
    # LightGBM folds the initial score (the mean of y) into the first tree's leaves; move it to
    # "base" (kept at full precision) so that rounding the leaves costs less.
    base = 0.0
    if trees:
        leaves = [v for j, v in zip(trees[0]["split"], trees[0]["value"]) if j < 0]
        base = float(np.mean(leaves))
        trees[0]["value"] = [v - base if j < 0 else 0.0 for j, v in zip(trees[0]["split"], trees[0]["value"])]
    return {"base": base, "trees": trees}


def eval_tree(tree: dict, x) -> float:
    split, thr, left, right = tree["split"], tree["threshold"], tree["left"], tree["right"]
    n = 0
    while split[n] >= 0:
        n = left[n] if x[split[n]] <= thr[n] else right[n]
    return tree["value"][n]


def eval_variant(entry: dict, x) -> float:
    """The C++ evaluator, in Python: base + the sum of the trees' leaf values."""
    s = float(entry["base"])
    for t in entry["trees"]:
        s += eval_tree(t, x)
    return s


def eval_rows(entry: dict, X) -> np.ndarray:
    return np.array([eval_variant(entry, x) for x in X])


def sig(v: float, digits: int) -> float:
    return float(f"{v:.{digits}g}")


def round_entry(entry: dict, sorted_values: list, digits: int = 7) -> dict:
    """Leaf values to `digits` significant digits; thresholds to the fewest digits (>= `digits`)
    that send every known value of the feature (sorted_values[j]) the same way as the exact one."""
    out = {"base": entry["base"], "trees": []}
    for t in entry["trees"]:
        thr = []
        for j, th in zip(t["split"], t["threshold"]):
            if j < 0:
                thr.append(0)
                continue
            vals = sorted_values[j]
            for d in range(digits, 18):
                r = sig(th, d)
                lo, hi = min(th, r), max(th, r)
                # a value v with lo < v <= hi would change side
                k = bisect_right(vals, lo)
                if k == len(vals) or vals[k] > hi:
                    break
            thr.append(r)
        vals_ = [0 if j >= 0 else sig(v, digits) for j, v in zip(t["split"], t["value"])]
        out["trees"].append({"split": t["split"], "threshold": thr, "left": t["left"], "right": t["right"],
                             "value": vals_})
    return out


def dumps_compact(obj) -> str:
    return json.dumps(obj, separators=(",", ":"), allow_nan=False)


# ------------------------------------------------------------------------------------------------
# Selection metrics


def problems_of(data: Data, idx) -> dict:
    """{pid: array of record indices (into data)} for records idx."""
    out = defaultdict(list)
    for i in np.asarray(idx):
        out[data.pid[i]].append(i)
    return {p: np.array(v) for p, v in out.items()}


def per_problem(data: Data, idx, pred) -> list[dict]:
    """For each problem among records idx with >= 2 measured variants: the chosen variant's time over
    the best (ratio), the predicted gap between the two best, and the pairwise residuals."""
    pos = {i: k for k, i in enumerate(np.asarray(idx))}
    out = []
    for p, recs in problems_of(data, idx).items():
        if len(recs) < 2:
            continue
        pr = np.array([pred[pos[i]] for i in recs])
        ms = data.ms[recs]
        y = data.y[recs]
        best = ms.min()
        order = np.argsort(pr, kind="stable")
        ratio_rank = ms[order] / best
        est = data.est[recs]
        vend = data.is_vendor[recs]
        d = (pr[:, None] - pr[None, :]) - (y[:, None] - y[None, :])
        iu = np.triu_indices(len(recs), 1)
        out.append({
            "pid": p, "op": data.op[recs[0]], "family": data.family[recs[0]], "graph": data.graph[recs[0]],
            "nvar": len(recs),
            "ratio": float(ratio_rank[0]),
            "ratio_rank": ratio_rank,  # measured/best of the candidates in predicted order
            "gap": float(pr[order[1]] - pr[order[0]]),
            "pair_res": d[iu],
            "est_ratio": float(ms[np.argmin(est)] / best) if np.isfinite(est).any() else float("nan"),
            "vendor_ratio": float(ms[vend][0] / best) if vend.any() else float("nan"),
        })
    return out


def gmean(x) -> float:
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    return float(np.exp(np.mean(np.log(x)))) if len(x) else float("nan")


def choose_margin(gaps, ok, target=0.97):
    """The smallest margin m (log2 units) such that among problems with gap > m the model's choice is
    within 5% of the best on >= target of them. Returns (m, fraction of problems confident)."""
    gaps = np.asarray(gaps, dtype=float)
    ok = np.asarray(ok, dtype=bool)
    if len(gaps) == 0:
        return MIN_MARGIN, 0.0
    # scheduler/select.cpp reads margin <= 0 as "never alone": the smallest margin is MIN_MARGIN.
    for m in np.unique(np.concatenate([[MIN_MARGIN], gaps[gaps > MIN_MARGIN]])):
        sel = gaps > m
        if not sel.any():
            return float(m), 0.0
        if ok[sel].mean() >= target:
            return float(m), float(sel.mean())
    return float(gaps.max()), 0.0


def summarize(rows: list[dict], top_k: int = 3, margin: float | None = None) -> dict:
    """Metrics over per_problem() rows (one op, or any set)."""
    if not rows:
        return {"n": 0}
    ratio = np.array([r["ratio"] for r in rows])
    ok = ratio <= WITHIN
    res = np.concatenate([r["pair_res"] for r in rows])
    s = {
        "n": len(rows),
        "within5": float(ok.mean()),
        "gmean": gmean(ratio),
        "worst": float(ratio.max()),
        "sigma": float(np.sqrt(np.mean(res ** 2))) if len(res) else 0.0,
        "est_within5": float(np.mean([r["est_ratio"] <= WITHIN for r in rows])),
        "est_gmean": gmean([r["est_ratio"] for r in rows]),
        "vendor_gmean": gmean([r["vendor_ratio"] for r in rows]),
        "vendor_within5": float(np.mean([r["vendor_ratio"] <= WITHIN for r in rows
                                          if np.isfinite(r["vendor_ratio"])] or [np.nan])),
    }
    topk = np.array([r["ratio_rank"][:top_k].min() for r in rows])
    s["topk_gmean"] = gmean(topk)
    s["topk_within5"] = float(np.mean(topk <= WITHIN))
    gaps = np.array([r["gap"] for r in rows])
    m, conf = choose_margin(gaps, ok) if margin is None else (margin, float(np.mean(gaps > margin)))
    s["margin"], s["confident"] = m, conf
    sel = gaps > m
    s["confident_within5"] = float(ok[sel].mean()) if sel.any() else float("nan")
    # The scheduler's policy: the model alone when confident, else the best measured of the top k.
    policy = np.where(sel, ratio, topk)
    s["policy_gmean"] = gmean(policy)
    s["policy_within5"] = float(np.mean(policy <= WITHIN))
    return s


def by_op(rows: list[dict]) -> dict:
    out = defaultdict(list)
    for r in rows:
        out[r["op"]].append(r)
    return dict(sorted(out.items()))


def fmt(x, spec=".3f") -> str:
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "-"
    return format(x, spec)
