import json, sys, glob, collections, statistics
for arm in sys.argv[1:]:
    recs=[]
    for f in sorted(glob.glob(f'/tmp/orc-{arm}-*.json')):
        for l in open(f):
            l=l.strip()
            if l.startswith('{'): recs.append(json.loads(l))
    within=sum(1 for r in recs if r['regret']<=0.05); worst=max(r['regret'] for r in recs)
    cold=[r['cold_ms'] for r in recs if r['nnz']<1000000]
    over=sum(1 for c in cold if c>5)
    print(f"{arm}: {len(recs)} cases, within 5%: {within} ({100*within/len(recs):.1f}%), worst regret {1+worst:.3f}; cold ms (<1M entries): median {statistics.median(cold):.2f}, max {max(cold):.2f}, over 5 ms: {over}/{len(cold)}")
