# Medians of each step of the timestamps trace_tmp.patch writes: python3 stamps.py FILE...
import sys, collections, statistics
lines = []
for path in sys.argv[1:]:
    for l in open(path):
        t, lab = l.split()
        lines.append((int(t), lab))
lines.sort()
seqs = []; cur = None
for t, lab in lines:
    if lab == 'p.begin':
        cur = [(t, lab)]; seqs.append(cur)
    elif cur is not None:
        cur.append((t, lab))
        if lab == 'p.end': cur = None
print(len(seqs), "sequences")
# group by label path
groups = collections.defaultdict(list)
for s in seqs:
    path = tuple(l for _, l in s)
    groups[path].append(s)
for path, ss in sorted(groups.items(), key=lambda kv: -len(kv[1])):
    print(f"== {len(ss)} sequences; total median {statistics.median((s[-1][0]-s[0][0])/1000 for s in ss):.1f} us")
    for i in range(1, len(path)):
        d = [(s[i][0]-s[i-1][0])/1000 for s in ss]
        print(f"   {path[i-1]:>12} -> {path[i]:<12} median {statistics.median(d):7.1f}  min {min(d):7.1f}  max {max(d):7.1f}")
