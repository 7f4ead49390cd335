// SPDX-License-Identifier: Apache-2.0
// The regular families: band (a fixed half-bandwidth around the diagonal), mesh2d, mesh3d and
// mesh3d27 (stencils on a grid, natural or randomly renumbered) and road (a thinned grid with
// diagonal shortcuts). Separate because their structure comes from coordinates, not from draws
// of columns: degrees are bounded and the patterns are banded unless renumbered.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/generators_internal.hpp"

namespace sparseport::detail::gen {

template <class I>
Pattern<I> make_band(const Spec& s) {
  const int64_t n = s.whole(0), deg = s.whole(1);
  check_rows_fit<I>(s, n);
  const int64_t h = std::min(deg / 2, std::max<int64_t>(n - 1, 0));
  // Rows away from the edges hold 2h+1 columns, the first and last h rows fewer.
  const long double nnz = static_cast<long double>(n) * (2 * h + 1) - static_cast<long double>(h) * (h + 1);
  check_nnz_fits<I>(s, "the band holds " + fmt_count(nnz), nnz);
  check_memory<I>(s, n, nnz, 0);

  Pattern<I> g;
  g.n = n;
  g.rowptr.resize(static_cast<size_t>(n) + 1);
  g.colind.resize(static_cast<size_t>(nnz));
  size_t k = 0;
  for (int64_t i = 0; i < n; ++i) {
    g.rowptr[static_cast<size_t>(i)] = static_cast<I>(k);
    for (int64_t j = std::max<int64_t>(0, i - h); j <= std::min(n - 1, i + h); ++j) g.colind[k++] = static_cast<I>(j);
  }
  g.rowptr[static_cast<size_t>(n)] = static_cast<I>(k);
  return g;
}

// mesh2d (5-point), mesh3d (7-point) and mesh3d27 (27-point) stencils on a grid, vertex
// (x, y, z) = (z NY + y) NX + x in natural order, or a random renumbering of the same graph.
template <class I>
Pattern<I> make_mesh(const Spec& s, uint64_t key) {
  const bool three = s.name() != "mesh2d", box = s.name() == "mesh3d27";
  const int64_t nx = s.whole(0), ny = s.whole(1), nz = three ? s.whole(2) : 1;
  const bool renumber = s.flag(three ? 3 : 2, "0: natural row-major order, 1: random vertex ids");
  const std::string dims = three ? "NX*NY*NZ" : "NX*NY";
  const long double rows_ld = static_cast<long double>(nx) * ny * nz;
  check_count_fits<I>(s, dims, rows_ld, "rows");
  // Star: the diagonal plus two per grid edge (N - N/n_d edges along dimension d); box: the
  // 3 n_d - 2 pairs within 1 along each dimension, multiplied.
  long double nnz = 0;
  if (rows_ld > 0 && box) {
    nnz = (3.0L * nx - 2) * (3.0L * ny - 2) * (3.0L * nz - 2);
  } else if (rows_ld > 0) {
    nnz = rows_ld + 2 * (rows_ld - rows_ld / nx) + 2 * (rows_ld - rows_ld / ny) + 2 * (rows_ld - rows_ld / nz);
  }
  check_nnz_fits<I>(s, "the stencil holds " + fmt_count(nnz), nnz);
  check_memory<I>(s, rows_ld, nnz, renumber ? 2 * rows_ld * sizeof(I) : 0);

  // Offsets in increasing order of their id delta, so natural rows come out sorted.
  struct Offset {
    int dx, dy, dz;
  };
  std::vector<Offset> offsets;
  for (int dz = three ? -1 : 0; dz <= (three ? 1 : 0); ++dz)
    for (int dy = -1; dy <= 1; ++dy)
      for (int dx = -1; dx <= 1; ++dx)
        if (box || std::abs(dx) + std::abs(dy) + std::abs(dz) <= 1) offsets.push_back({dx, dy, dz});

  const auto n = static_cast<int64_t>(rows_ld);
  Pattern<I> g;
  g.n = n;
  g.rowptr.resize(static_cast<size_t>(n) + 1);
  g.colind.resize(static_cast<size_t>(nnz));
  std::vector<I> old_of, new_of;  // renumbering: new id -> grid vertex, and back
  if (renumber) {
    old_of = random_permutation<I>(n, detail::derive_key(key, 0));
    new_of.resize(static_cast<size_t>(n));
    for (int64_t r = 0; r < n; ++r) new_of[static_cast<size_t>(old_of[static_cast<size_t>(r)])] = static_cast<I>(r);
  }
  size_t k = 0;
  for (int64_t r = 0; r < n; ++r) {
    g.rowptr[static_cast<size_t>(r)] = static_cast<I>(k);
    const int64_t v = renumber ? static_cast<int64_t>(old_of[static_cast<size_t>(r)]) : r;
    const int64_t x = v % nx, y = v / nx % ny, z = v / nx / ny;
    const size_t first = k;
    for (const Offset& o : offsets) {
      const int64_t xx = x + o.dx, yy = y + o.dy, zz = z + o.dz;
      if (xx < 0 || xx >= nx || yy < 0 || yy >= ny || zz < 0 || zz >= nz) continue;
      const int64_t u = (zz * ny + yy) * nx + xx;
      g.colind[k++] = renumber ? new_of[static_cast<size_t>(u)] : static_cast<I>(u);
    }
    if (renumber)  // at most 27 entries: insertion sort
      for (size_t a = first + 1; a < k; ++a)
        for (size_t b = a; b > first && g.colind[b - 1] > g.colind[b]; --b) std::swap(g.colind[b - 1], g.colind[b]);
  }
  g.rowptr[static_cast<size_t>(n)] = static_cast<I>(k);
  return g;
}

// Road-like: the 4-neighbour grid with each edge kept with probability KEEP (both directions),
// plus diagonal shortcuts: the 2x2 cells at even (x, y) are disjoint, and each gets one of its two
// diagonals with probability 1/25, so there are about N/100 shortcuts and no degree exceeds 5.
template <class I>
Pattern<I> make_road(const Spec& s, uint64_t key) {
  const int64_t nx = s.whole(0), ny = s.whole(1);
  const double keep = s.fraction(2);
  const long double rows_ld = static_cast<long double>(nx) * ny;
  check_count_fits<I>(s, "NX*NY", rows_ld, "rows");
  const long double edges = rows_ld == 0 ? 0 : 2 * rows_ld - nx - ny;
  const long double most = 2 * edges + rows_ld / 2;
  check_nnz_fits<I>(s, "the grid and its shortcuts hold up to " + fmt_count(most), most);
  check_memory<I>(s, rows_ld, 2 * keep * edges + rows_ld / 50, 0);

  const auto n = static_cast<int64_t>(rows_ld);
  Pattern<I> g;
  g.n = n;
  g.rowptr.assign(static_cast<size_t>(n) + 1, 0);
  g.colind.reserve(static_cast<size_t>(std::min<long double>(2 * keep * edges * 1.01L + rows_ld / 40 + 64, most)));
  // Edge (x,y)-(x+1,y) is word 2v of the edge stream, (x,y)-(x,y+1) word 2v+1 (v = y NX + x):
  // both of its rows ask the same word.
  const uint64_t edge_key = detail::derive_key(key, 0), cell_key = detail::derive_key(key, 1);
  const uint64_t threshold = keep >= 1.0 ? 0 : static_cast<uint64_t>(std::ldexp(keep, 64));
  const auto kept = [&](int64_t v, int vertical) {
    return keep >= 1.0 || detail::word_at(edge_key, 2 * static_cast<uint64_t>(v) + static_cast<uint64_t>(vertical)) < threshold;
  };
  constexpr uint64_t kShortcut = (uint64_t{1} << 32) / 25;
  for (int64_t y = 0; y < ny; ++y)
    for (int64_t x = 0; x < nx; ++x) {
      const int64_t v = y * nx + x;
      int sdx = 0, sdy = 0;  // the shortcut's direction, if any
      const int64_t cx = x & ~int64_t{1}, cy = y & ~int64_t{1};
      if (cx + 1 < nx && cy + 1 < ny) {
        const uint64_t w = detail::word_at(cell_key, static_cast<uint64_t>(cy * nx + cx));
        if ((w >> 32) < kShortcut) {
          const bool main = (w & 1) != 0;  // (cx,cy)-(cx+1,cy+1), else (cx+1,cy)-(cx,cy+1)
          const int64_t ox = x - cx, oy = y - cy;
          if (main == (ox == oy)) {
            sdx = ox == 0 ? 1 : -1;
            sdy = oy == 0 ? 1 : -1;
          }
        }
      }
      const auto add = [&](int64_t u) {
        if (static_cast<int64_t>(g.colind.size()) == kIndexMax<I>)
          s.refuse("the graph exceeded " + std::to_string(kIndexMax<I>) + " entries, more than " + kIndexName<I> +
                   " indices can address; use int64 indices");
        g.colind.push_back(static_cast<I>(u));
      };
      if (sdy < 0 && sdx < 0) add(v - nx - 1);
      if (y > 0 && kept(v - nx, 1)) add(v - nx);
      if (sdy < 0 && sdx > 0) add(v - nx + 1);
      if (x > 0 && kept(v - 1, 0)) add(v - 1);
      if (x + 1 < nx && kept(v, 0)) add(v + 1);
      if (sdy > 0 && sdx < 0) add(v + nx - 1);
      if (y + 1 < ny && kept(v, 1)) add(v + nx);
      if (sdy > 0 && sdx > 0) add(v + nx + 1);
      g.rowptr[static_cast<size_t>(v) + 1] = static_cast<I>(g.colind.size());
    }
  return g;
}

template Pattern<int32_t> make_band<int32_t>(const Spec&);
template Pattern<int64_t> make_band<int64_t>(const Spec&);
template Pattern<int32_t> make_mesh<int32_t>(const Spec&, uint64_t);
template Pattern<int64_t> make_mesh<int64_t>(const Spec&, uint64_t);
template Pattern<int32_t> make_road<int32_t>(const Spec&, uint64_t);
template Pattern<int64_t> make_road<int64_t>(const Spec&, uint64_t);

}  // namespace sparseport::detail::gen
