#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The training corpus of the scheduler's cost model: generator specs, one per line.

    python3 scheduler/model/corpus.py [--max-nnz 2e7] [--min-nnz 1e4] [--sizes 6] [--limit N]
                                      [--families rmatp,chunglu,...] [--with-nnz]

Every line is a spec `sparseport` generates (core/generators.cpp, documented in
include/sparseport/graph.hpp), ending in @SEED. The corpus spans the inputs the model sees:
skew (rmatp, chunglu, hubs, megarow), locality (natural meshes, band, sbm, road vs. er, chunglu,
renumbered meshes), average degree (road ~3 to mesh3d27 27 and band 65), empty rows (rmatp, road,
chunglu), rectangular shapes (bipartite). Each family has a few variants, each at --sizes
log-spaced sizes from --min-nnz to --max-nnz entries, and the two smallest sizes once more with a
second seed (replicates show the noise of a measurement). The estimated entries of a spec are
what it draws (duplicates are merged, so rmatp, chunglu and bipartite store fewer: chunglu with
EXPONENT 1.8 only a quarter of it at 2e7 draws), never more than --max-nnz. The defaults give 223
specs (12 families, 28 variants). Output order: family, variant, size; --limit keeps N specs spread
evenly over that order, so every family keeps its share. Python 3 standard library only.
"""
import argparse
import math
import sys

# Seeds: the i-th size of a variant gets SEEDS[i % 3]; the replicates of the two smallest sizes
# the next one.
SEEDS = (1, 2, 3)


def _num(x: float) -> str:
    """A field the spec parser reads back exactly: integers plainly, others with 6 digits."""
    if float(x).is_integer():
        return str(int(x))
    return f"{x:.6g}"


# Each family: name -> list of variants; a variant is a function target_nnz -> (spec, entries) or
# None when the size does not suit it, with entries <= target (rounding down).

def _rmatp(a, b, c, ef):
    def make(target):
        scale = int(math.floor(math.log2(target / ef)))
        if scale < 1:
            return None
        return f"rmatp:{scale}:{ef}:{_num(a)}:{_num(b)}:{_num(c)}", ef << scale
    return make


def _chunglu(exponent, avgdeg):
    def make(target):
        n = int(target // avgdeg)
        if n < 4 * avgdeg:
            return None
        return f"chunglu:{n}:{avgdeg}:{_num(exponent)}", n * avgdeg
    return make


def _er(deg):
    def make(target):
        n = int(target // deg)
        if n < 4 * deg:
            return None
        p = deg / n
        return f"er:{n}:{_num(p)}", int(n * n * float(_num(p)))
    return make


def _mesh(kind, dims, per_row, renumber):
    def make(target):
        n = target / per_row
        if dims == 2:  # a 2:1 rectangle, rows of NX
            nx = int(math.floor(math.sqrt(2 * n)))
            ny = int(n // nx) if nx > 0 else 0
            if ny < 3:
                return None
            return f"{kind}:{nx}:{ny}:{renumber}", nx * ny * per_row
        side = int(math.floor(n ** (1.0 / 3)))
        while (side + 1) ** 3 <= n:  # the float cube root may fall just short
            side += 1
        if side < 3:
            return None
        return f"{kind}:{side}:{side}:{side}:{renumber}", side ** 3 * per_row
    return make


def _band(deg):
    def make(target):
        n = int(target // (deg + 1))
        if n < 2 * deg:
            return None
        return f"band:{n}:{deg}", n * (deg + 1)
    return make


def _sbm(deg_in, deg_out, block_rows):
    def make(target):
        n = int(target // (deg_in + deg_out))
        blocks = max(2, n // block_rows)
        if n // blocks < deg_in or n - (n + blocks - 1) // blocks < deg_out:
            return None
        return f"sbm:{n}:{blocks}:{deg_in}:{deg_out}", n * (deg_in + deg_out)
    return make


def _hubs(deg, nhubs, hub_share):
    """hub_share: the hubs hold about this share of the entries (each at most N columns)."""
    def make(target):
        n = int(target // (deg / (1 - hub_share)))
        hub_deg = min(n, int(target * hub_share // nhubs))
        if n < 10 * nhubs or hub_deg <= deg:
            return None
        return f"hubs:{n}:{deg}:{nhubs}:{hub_deg}", (n - nhubs) * deg + nhubs * hub_deg
    return make


def _megarow(deg, row_share):
    """row_share of the N*DEG entries in row 0 (at most N of them: row_share <= 1/DEG)."""
    def make(target):
        n = int(target // deg)
        if n < 100:
            return None
        return f"megarow:{n}:{deg}:{_num(row_share)}", n * deg
    return make


def _bipartite(deg, cols_per_row):
    def make(target):
        rows = int(target // deg)
        cols = max(deg, int(rows * cols_per_row))
        if rows < 100:
            return None
        return f"bipartite:{rows}:{cols}:{deg}", rows * deg
    return make


def _road(keep):
    def make(target):
        # 4*KEEP entries per vertex from the grid, ~0.02 from shortcuts.
        side = int(math.floor(math.sqrt(target / (4 * keep + 0.02))))
        if side < 10:
            return None
        return f"road:{side}:{side}:{_num(keep)}", int(side * side * (4 * keep + 0.02))
    return make


FAMILIES = {
    # Graph500, milder and near-uniform quadrants, and a very skewed one; different edge factors.
    "rmatp": [_rmatp(0.57, 0.19, 0.19, 16), _rmatp(0.45, 0.15, 0.15, 8), _rmatp(0.35, 0.25, 0.25, 32),
              _rmatp(0.7, 0.1, 0.1, 16)],
    "chunglu": [_chunglu(1.8, 16), _chunglu(2.1, 8), _chunglu(2.5, 16), _chunglu(3.0, 32)],
    "er": [_er(4), _er(32)],
    "mesh2d": [_mesh("mesh2d", 2, 5, 0), _mesh("mesh2d", 2, 5, 1)],
    "mesh3d": [_mesh("mesh3d", 3, 7, 0), _mesh("mesh3d", 3, 7, 1)],
    "mesh3d27": [_mesh("mesh3d27", 3, 27, 0), _mesh("mesh3d27", 3, 27, 1)],
    "band": [_band(6), _band(64)],
    "sbm": [_sbm(16, 0, 512), _sbm(12, 4, 4096)],  # block diagonal; with edges outside
    "hubs": [_hubs(8, 8, 0.1), _hubs(4, 256, 0.3)],  # a few huge hubs; many medium ones
    "megarow": [_megarow(8, 0.1), _megarow(16, 0.02)],
    "bipartite": [_bipartite(16, 1 / 16), _bipartite(32, 2.0)],  # tall feature matrix; wide
    "road": [_road(0.6), _road(0.9)],
}


def corpus(min_nnz: float, max_nnz: float, sizes: int, families) -> list:
    """[(spec, entries)] in family, variant, size order."""
    out = []
    for fam in families:
        for variant in FAMILIES[fam]:
            seen = set()
            made = []
            for i in range(sizes):
                t = min_nnz * (max_nnz / min_nnz) ** (i / (sizes - 1)) if sizes > 1 else max_nnz
                m = variant(math.floor(t * (1 + 1e-12)))
                if m is None or m[0] in seen or m[1] > max_nnz or m[1] < min_nnz / 2:
                    continue
                seen.add(m[0])
                made.append(m)
            for i, (spec, entries) in enumerate(made):
                out.append((f"{spec}@{SEEDS[i % len(SEEDS)]}", entries))
                if i < 2:
                    out.append((f"{spec}@{SEEDS[(i + 1) % len(SEEDS)]}", entries))
    return out


def spread(items: list, limit: int) -> list:
    """limit items evenly spread over the list (first and last included)."""
    if limit <= 0 or limit >= len(items):
        return items
    if limit == 1:
        return [items[0]]
    return [items[round(k * (len(items) - 1) / (limit - 1))] for k in range(limit)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-nnz", type=float, default=2e7, help="largest estimated entries of a graph (default 2e7)")
    ap.add_argument("--min-nnz", type=float, default=1e4, help="smallest target entries (default 1e4)")
    ap.add_argument("--sizes", type=int, default=6, help="log-spaced sizes per variant (default 6)")
    ap.add_argument("--limit", type=int, default=0, help="keep N specs spread evenly over the corpus")
    ap.add_argument("--families", default="", help="comma-separated subset of: " + ",".join(FAMILIES))
    ap.add_argument("--with-nnz", action="store_true", help="print 'SPEC<TAB>estimated entries'")
    args = ap.parse_args(argv)
    if not (0 < args.min_nnz <= args.max_nnz):
        ap.error(f"need 0 < --min-nnz <= --max-nnz (got {args.min_nnz:g} and {args.max_nnz:g})")
    if args.sizes < 1:
        ap.error("--sizes must be at least 1")
    fams = [f.strip() for f in args.families.split(",") if f.strip()] if args.families else list(FAMILIES)
    unknown = [f for f in fams if f not in FAMILIES]
    if unknown:
        ap.error(f"unknown families {','.join(unknown)} (known: {','.join(FAMILIES)})")
    try:
        for spec, entries in spread(corpus(args.min_nnz, args.max_nnz, args.sizes, fams), args.limit):
            print(f"{spec}\t{entries}" if args.with_nnz else spec)
        sys.stdout.flush()
    except BrokenPipeError:  # `corpus.py | head`: the reader has what it wanted
        sys.stdout = None
    return 0


if __name__ == "__main__":
    sys.exit(main())
