# Session 43: the summary of an oracle A/B folder (model-ab.sh, check-ab.sh): per arm, the cases within 5 %
# of the best, the model alone, cold decisions over 5 ms and their geomean, full-size calls on >= 1M
# entries. A second argument lists the cases over 5 ms or over 5 % regret.
#   python3 ab_summary.py /tmp/s43/ev [list]
import json, glob, sys, collections, math
rows = collections.defaultdict(list)
for f in sorted(glob.glob((sys.argv[1] if len(sys.argv) > 1 else '/tmp/s43/ev') + '/*-F*-r*.json')):
    m = f.split('/')[-1].split('-')[0]
    for l in open(f):
        if l.startswith('{'):
            d = json.loads(l); d['_file'] = f; rows[m].append(d)
for m, ds in rows.items():
    n = len(ds)
    w5 = sum(d['regret'] <= 0.05 for d in ds)
    worst = max(1 + d['regret'] for d in ds)
    ma = [d for d in ds if 'model_regret' in d]
    alone = sum(d['model_regret'] <= 0.05 for d in ma)
    src = collections.Counter(d['source'] for d in ds)
    over5 = sum(d['cold_ms'] > 5 for d in ds)
    big = [d['cold_cost_ops'] for d in ds if d['nnz'] >= 1_000_000]
    cold = sorted(d['cold_ms'] for d in ds)
    gm = math.exp(sum(math.log(max(c, 1e-3)) for c in cold) / n)
    timing = collections.Counter(d.get('timing') for d in ds)
    print(f"{m}: cases {n}, within5 {w5} ({100*w5/n:.0f}%), worst {worst:.3f}, model alone within5 {alone}/{len(ma)} ({100*alone/max(1,len(ma)):.0f}%), "
          f"cold>5ms {over5}, cold median {cold[n//2]:.2f} ms geomean {gm:.2f} ms, >=1M calls {['%.2f'%b for b in big]}, sources {dict(src)}, timing {dict(timing)}")
if len(sys.argv) > 2:
    for m, ds in rows.items():
        for d in ds:
            if d['cold_ms'] > 5 or d['regret'] > 0.05:
                print(m, d['_file'].split('/')[-1], d['graph'].split('/')[-1][:20], f"F{d['F']} regret {d['regret']:.3f} cold {d['cold_ms']:.2f} ms ops {d['cold_cost_ops']:.2f} {d['source']} {d.get('timing')}")
