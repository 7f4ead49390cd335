import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l); ms = {k[3:]: v for k, v in r.items() if k.startswith("ms:")}
    best = min(ms.values()); hub = ms.get("spmm.hub_split", float("nan"))
    print(f"{r['graph']} F={r['F']} chosen {r['chosen']} best {r['best']} regret {r['regret']:.3f} hub_split/best {hub/best:.2f} "
          + " ".join(f"{k.split('.',1)[1]}={v:.3f}" for k, v in sorted(ms.items(), key=lambda x: x[1])))
