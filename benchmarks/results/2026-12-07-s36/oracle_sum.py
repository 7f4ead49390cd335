import json, sys, math
for fn in sys.argv[1:]:
    rows = [json.loads(l) for l in open(fn) if l.strip()]
    n = len(rows); w5 = sum(r["regret"] <= 0.05 for r in rows)
    m5 = sum(r.get("model_regret", 9) <= 0.05 for r in rows)
    worst = max(rows, key=lambda r: r["regret"]) if rows else None
    ver = sum(bool(r.get("verified")) for r in rows)
    alone = sum(bool(r.get("model_alone")) for r in rows)
    picks = {}
    for r in rows: picks[r.get("model_pick")] = picks.get(r.get("model_pick"), 0) + 1
    best = {}
    for r in rows: best[r.get("best")] = best.get(r.get("best"), 0) + 1
    gm = math.exp(sum(math.log(r["cold_cost_ops"]) for r in rows) / n) if n else 0
    print(f"{fn}: cases {n}, within5% {w5}, worst {worst['regret']:.3f} ({worst['graph'].split('/')[-1]} F{worst['F']}), "
          f"model within5% {m5}, model_alone {alone}, verified {ver}, cold_cost_ops geomean {gm:.1f}")
    print("  model picks", picks, " best", best)
