// SPDX-License-Identifier: Apache-2.0
// The device paths of the kokkos structural ops that have one (csr_slice_rows_dense: the zeroing by
// teams across each row and the scatter by runs of repeated columns; csr_induced_subgraph: the
// fill by a scan over lanes), as generated for a host space by generate.cmake (README.md in this
// folder), against the reference kernels, bit for bit: csr_slice_rows too (both phases), on a matrix
// with a hub row, empty rows, repeated columns next to each other and apart (an unsorted row), -0.0
// values, pattern and valued, int32 and int64, float and double, padded and unpadded outputs,
// outputs wider than one zeroing tile.
#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/kokkos/kernels.hpp"
#include "kernels/reference/kernels.hpp"

using namespace sparseport;
static int failures = 0, checks = 0;

template <class T>
void same(const std::vector<T>& got, const std::vector<T>& want, const std::string& what) {
  ++checks;
  if (got.size() == want.size() && (got.empty() || std::memcmp(got.data(), want.data(), got.size() * sizeof(T)) == 0))
    return;
  ++failures;
  size_t k = 0;
  while (k < got.size() && k < want.size() && std::memcmp(&got[k], &want[k], sizeof(T)) == 0) ++k;
  std::printf("FAIL %s: %zu against %zu values, first difference at %zu\n", what.c_str(), got.size(), want.size(), k);
}

// rows x cols. Row 2 a hub of 3000 entries (sorted, each column twice in a row: runs of two); row 5
// unsorted with a repeated column apart; every 7th row empty; the rest 0-12 sorted distinct columns,
// some repeated next to each other. Values: random, -0.0 every 11th entry.
template <class I, class V>
struct Graph {
  int64_t rows = 0, cols = 0;
  std::vector<I> rp, ci;
  std::vector<V> val;
};

template <class I, class V>
Graph<I, V> graph(int64_t rows, int64_t cols, std::mt19937_64& rng) {
  Graph<I, V> g;
  g.rows = rows;
  g.cols = cols;
  g.rp.push_back(0);
  std::uniform_real_distribution<double> u(-1, 1);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<I> row;
    if (r == 2) {
      for (int64_t k = 0; k < 1500; ++k) row.insert(row.end(), 2, static_cast<I>((k * 7) % cols));
      std::sort(row.begin(), row.end());
    } else if (r == 5) {
      row = {static_cast<I>(9 % cols), static_cast<I>(3 % cols), static_cast<I>(9 % cols), static_cast<I>(1 % cols)};
    } else if (r % 7 != 0) {
      const int64_t n = static_cast<int64_t>(rng() % 13);
      for (int64_t k = 0; k < n; ++k) row.push_back(static_cast<I>(rng() % cols));
      std::sort(row.begin(), row.end());
      if (n > 2) row[1] = row[0];  // a run of two
      std::sort(row.begin(), row.end());
    }
    g.ci.insert(g.ci.end(), row.begin(), row.end());
    g.rp.push_back(static_cast<I>(g.ci.size()));
  }
  for (size_t e = 0; e < g.ci.size(); ++e) g.val.push_back(e % 11 == 0 ? V(-0.0) : static_cast<V>(u(rng)));
  return g;
}

template <class I, class V>
sparseport_csr csr(const Graph<I, V>& g, bool pattern) {
  const int32_t it = sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32, vt = sizeof(V) == 8 ? SPARSEPORT_F64 : SPARSEPORT_F32;
  return {g.rows, g.cols, static_cast<int64_t>(g.ci.size()), g.rp.data(), g.ci.data(), pattern ? nullptr : g.val.data(), it, vt};
}

// Both phases of a CSR-producing op (csr_slice_rows, csr_induced_subgraph) into host vectors.
template <class I, class V, class Args, class Fn>
void two_phases(Args a, int64_t out_rows, Fn run, std::vector<I>& rp, std::vector<I>& ci, std::vector<V>& val, bool pattern) {
  rp.assign(static_cast<size_t>(out_rows + 1), I(-5));
  a.out.rows = out_rows;
  a.out.rowptr = rp.data();
  a.phase = 0;
  run(a);
  const int64_t nnz = static_cast<int64_t>(rp[static_cast<size_t>(out_rows)]);
  ci.assign(static_cast<size_t>(nnz), I(-5));
  val.assign(pattern ? 0 : static_cast<size_t>(nnz), V(-5));
  a.out.nnz = nnz;
  a.out.colind = ci.data();
  a.out.values = pattern ? nullptr : val.data();
  a.phase = 1;
  run(a);
}

// Both phases by the reference and by the kokkos kernel, the three arrays compared bit for bit.
template <class I, class V, class Args>
void against_reference(const Args& a, int64_t out_rows, void (*ref)(const Args&), void (*kk)(const Args&),
                       const std::string& what, bool pattern) {
  std::vector<I> rp0, ci0, rp1, ci1;
  std::vector<V> v0, v1;
  two_phases<I, V>(a, out_rows, ref, rp0, ci0, v0, pattern);
  two_phases<I, V>(a, out_rows, kk, rp1, ci1, v1, pattern);
  same(rp1, rp0, what + " rowptr");
  same(ci1, ci0, what + " colind");
  same(v1, v0, what + " values");
}

template <class I, class V>
void suite(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int32_t it = sizeof(I) == 8 ? SPARSEPORT_I64 : SPARSEPORT_I32, vt = sizeof(V) == 8 ? SPARSEPORT_F64 : SPARSEPORT_F32;
  const std::string tn = std::string(sizeof(I) == 8 ? "<i64," : "<i32,") + (sizeof(V) == 8 ? "f64>" : "f32>");
  for (int64_t cols : {int64_t{40}, int64_t{5000}}) {  // 5000: three zeroing tiles a row
    const int64_t rows = 60;
    const Graph<I, V> g = graph<I, V>(rows, cols, rng);
    // Selected rows: every row once in a shuffled order, then the hub, the unsorted row and an empty
    // one again (csr_slice_rows allows repeats).
    std::vector<I> pick(static_cast<size_t>(rows));
    for (int64_t r = 0; r < rows; ++r) pick[static_cast<size_t>(r)] = static_cast<I>(r);
    std::shuffle(pick.begin(), pick.end(), rng);
    pick.insert(pick.end(), {I(2), I(5), I(0)});
    const int64_t s = static_cast<int64_t>(pick.size());
    for (bool pattern : {false, true}) {
      const std::string base = tn + " cols=" + std::to_string(cols) + (pattern ? " pattern" : " valued");
      for (int pad : {0, 3}) {
        const int64_t ld = cols + pad;
        sparseport_slice_rows_dense_args a{};
        a.a = csr(g, pattern);
        a.rows = {s, pick.data(), it};
        std::vector<V> want(static_cast<size_t>(s * ld), V(7)), got = want;
        a.out = {s, cols, ld, want.data(), vt};
        reference::csr_slice_rows_dense(a);
        a.out.data = got.data();
        kokkos::csr_slice_rows_dense(a);
        same(got, want, "csr_slice_rows_dense " + base + " pad=" + std::to_string(pad));
      }
      {
        sparseport_slice_rows_args a{};
        a.a = csr(g, pattern);
        a.rows = {s, pick.data(), it};
        a.out = {s, cols, 0, nullptr, nullptr, nullptr, it, vt};
        against_reference<I, V>(a, s, &reference::csr_slice_rows, &kokkos::csr_slice_rows, "csr_slice_rows " + base, pattern);
      }
      if (cols == 40) {
        // Induced subgraphs need a square A: the graph's first 40 rows (60 x 40).
        Graph<I, V> sq = g;
        sq.rows = 40;
        sq.rp.resize(41);
        sq.ci.resize(static_cast<size_t>(sq.rp.back()));
        sq.val.resize(sq.ci.size());
        for (int k = 0; k < 2; ++k) {
          // Half the vertices in a shuffled order, the hub (2) and the unsorted row (5) among them; then all.
          std::vector<I> vert(40);
          for (int64_t r = 0; r < 40; ++r) vert[static_cast<size_t>(r)] = static_cast<I>(r);
          std::shuffle(vert.begin(), vert.end(), rng);
          if (k == 0) {
            vert.resize(20);
            for (I must : {I(2), I(5)})
              if (std::find(vert.begin(), vert.end(), must) == vert.end()) vert.push_back(must);
          }
          const int64_t nv = static_cast<int64_t>(vert.size());
          sparseport_induced_subgraph_args a{};
          a.a = csr(sq, pattern);
          a.vertices = {nv, vert.data(), it};
          a.out = {nv, nv, 0, nullptr, nullptr, nullptr, it, vt};
          against_reference<I, V>(a, nv, &reference::csr_induced_subgraph, &kokkos::csr_induced_subgraph,
                                  "csr_induced_subgraph " + base + (k == 0 ? " half" : " all"), pattern);
        }
      }
    }
  }
}

int main(int argc, char** argv) {
  Kokkos::initialize(argc, argv);
  {
    std::printf("space %s concurrency %d, lanes %d\n", Kokkos::DefaultExecutionSpace::name(),
                Kokkos::DefaultExecutionSpace().concurrency(), SPARSEPORT_SIM_VLMAX);
    suite<int32_t, float>(31);
    suite<int32_t, double>(32);
    suite<int64_t, float>(33);
    suite<int64_t, double>(34);
  }
  Kokkos::finalize();
  std::printf("%d checks, %d failed\n", checks, failures);
  return failures ? 1 : 0;
}
