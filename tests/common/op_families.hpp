// SPDX-License-Identifier: Apache-2.0
// One call of each op family on a context, every result checked against a double-precision host
// loop (WrongResult otherwise): what the exit, fork and thread tests of issue 34 run.
#pragma once

#include <sparseport/sparseport.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

namespace sparseport::test {

namespace sp = sparseport;

inline const char* const kOpFamilies[] = {"spmm", "spmm16", "sddmm", "segment", "gather_scatter", "attention", "structural", "plan"};

// A small graph with a hub row (a third of the columns), a few empty rows, sorted columns.
struct Graph {
  int32_t n = 1500;
  std::vector<int32_t> rowptr{0}, colind;
  std::vector<float> values;
};

inline Graph make_graph(uint64_t seed) {
  Graph g;
  std::mt19937_64 rng(seed);
  for (int32_t i = 0; i < g.n; ++i) {
    const int32_t deg = i == 7 ? g.n / 3 : i % 97 == 0 ? 0 : static_cast<int32_t>(rng() % 12);
    std::vector<int32_t> cols;
    for (int32_t k = 0; k < deg; ++k) cols.push_back(static_cast<int32_t>(rng() % static_cast<uint64_t>(g.n)));
    std::sort(cols.begin(), cols.end());
    cols.erase(std::unique(cols.begin(), cols.end()), cols.end());
    for (int32_t c : cols) {
      g.colind.push_back(c);
      g.values.push_back(static_cast<float>(rng() % 1000) / 1000.0f - 0.5f);
    }
    g.rowptr.push_back(static_cast<int32_t>(g.colind.size()));
  }
  return g;
}

// A result that differs from the host loop.
struct WrongResult : std::runtime_error {
  using std::runtime_error::runtime_error;
};
[[noreturn]] inline void wrong(const std::string& what) { throw WrongResult("wrong result: " + what); }

template <class T>
sp::Buffer upload(const sp::Context& ctx, const std::vector<T>& v) {
  sp::Buffer b = ctx.allocate(std::max<size_t>(1, v.size() * sizeof(T)));
  if (!v.empty()) ctx.copy_to_backend(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}

template <class T>
std::vector<T> download(const sp::Context& ctx, const sp::Buffer& b, size_t n) {
  std::vector<T> v(n);
  if (n != 0) ctx.copy_to_host(v.data(), b.data(), n * sizeof(T));
  return v;
}

// C = A * B on the host in double, B filled as b[j*F + f] = ((j + 3f) % 17 - 8) / 16.
inline float b_at(int64_t j, int64_t f) { return static_cast<float>((j + 3 * f) % 17 - 8) / 16.0f; }

inline void check_spmm(const Graph& g, int64_t F, const std::vector<float>& c, double tol, const std::string& what) {
  for (int32_t i = 0; i < g.n; ++i)
    for (int64_t f = 0; f < F; ++f) {
      double want = 0;
      for (int32_t e = g.rowptr[i]; e < g.rowptr[i + 1]; ++e) want += double(g.values[e]) * b_at(g.colind[e], f);
      const double got = c[static_cast<size_t>(i * F + f)];
      if (std::abs(got - want) > tol * (1 + std::abs(want))) wrong(what + " row " + std::to_string(i));
    }
}

// One op family on ctx, every result checked.
inline void run_family(const sp::Context& ctx, const std::string& family, const Graph& g) {
  const int64_t F = 24, nnz = static_cast<int64_t>(g.colind.size());
  std::vector<float> bh(static_cast<size_t>(g.n * F));
  for (int64_t j = 0; j < g.n; ++j)
    for (int64_t f = 0; f < F; ++f) bh[static_cast<size_t>(j * F + f)] = b_at(j, f);
  const sp::Buffer rp = upload(ctx, g.rowptr), ci = upload(ctx, g.colind), va = upload(ctx, g.values);
  const sp::Buffer b = upload(ctx, bh);
  sp::Buffer c = ctx.allocate(bh.size() * sizeof(float));
  const auto* rpp = static_cast<const int32_t*>(rp.data());
  const auto* cip = static_cast<const int32_t*>(ci.data());
  const sp::CsrView a = sp::make_csr<int32_t, float>(g.n, g.n, nnz, rpp, cip, static_cast<const float*>(va.data()));
  const sp::DenseView bv = sp::make_dense<float>(g.n, F, F, static_cast<const float*>(b.data()));
  const sp::DenseMutView cv = sp::make_dense<float>(g.n, F, F, static_cast<float*>(c.data()));

  if (family == "spmm") {
    sp::spmm(ctx, a, bv, cv);
    check_spmm(g, F, download<float>(ctx, c, bh.size()), 1e-4, "spmm");
  } else if (family == "spmm16") {
    // Every named spmm variant on bfloat16 values: those that do not take 16-bit values run on
    // float32 copies held by a one-shot plan in the scheduler's memo (what crashed at exit).
    std::vector<sp::bfloat16> v16, b16;
    for (float x : g.values) v16.emplace_back(x);
    for (float x : bh) b16.emplace_back(x);
    const sp::Buffer va16 = upload(ctx, v16), b16d = upload(ctx, b16);
    sp::Buffer c16 = ctx.allocate(bh.size() * sizeof(sp::bfloat16));
    const auto a16 = sp::make_csr<int32_t, sp::bfloat16>(g.n, g.n, nnz, rpp, cip,
                                                          static_cast<const sp::bfloat16*>(va16.data()));
    const auto bv16 = sp::make_dense<sp::bfloat16>(g.n, F, F, static_cast<const sp::bfloat16*>(b16d.data()));
    const auto cv16 = sp::make_dense<sp::bfloat16>(g.n, F, F, static_cast<sp::bfloat16*>(c16.data()));
    for (const sp::VariantInfo& v : ctx.plugin().variants) {
      if (v.op != SPARSEPORT_OP_SPMM || v.tf32) continue;  // TF32: float32 values only, and only with consent
      sp::SpmmOptions opt;
      opt.variant = v.name;
      try {
        sp::spmm(ctx, a16, bv16, cv16, opt);
      } catch (const sp::Unsupported&) {
        continue;  // a variant that does not apply to this input (e.g. F % 4)
      }
      std::vector<float> got;
      for (const sp::bfloat16& x : download<sp::bfloat16>(ctx, c16, bh.size())) got.push_back(static_cast<float>(x));
      check_spmm(g, F, got, 0.05, "spmm16 " + v.name);
    }
  } else if (family == "sddmm") {
    sp::Buffer out = ctx.allocate(static_cast<size_t>(nnz) * sizeof(float));
    sp::sddmm(ctx, a, bv, bv, sp::make_dense<float>(nnz, 1, 1, static_cast<float*>(out.data())));
    const std::vector<float> o = download<float>(ctx, out, static_cast<size_t>(nnz));
    for (int32_t i = 0; i < g.n; ++i)
      for (int32_t e = g.rowptr[i]; e < g.rowptr[i + 1]; ++e) {
        double dot = 0;
        for (int64_t f = 0; f < F; ++f) dot += double(b_at(i, f)) * b_at(g.colind[e], f);
        const double want = g.values[e] * dot;
        if (std::abs(o[e] - want) > 1e-4 * (1 + std::abs(want))) wrong("sddmm entry " + std::to_string(e));
      }
  } else if (family == "segment" || family == "gather_scatter") {
    // The rows of A as a sorted COO: segment/scatter of the gathered messages, and gather_scatter.
    std::vector<int32_t> row;
    for (int32_t i = 0; i < g.n; ++i)
      for (int32_t e = g.rowptr[i]; e < g.rowptr[i + 1]; ++e) row.push_back(i);
    const sp::Buffer rowd = upload(ctx, row);
    if (family == "gather_scatter") {
      const auto edges = sp::make_coo<int32_t, float>(g.n, g.n, nnz, static_cast<const int32_t*>(rowd.data()), cip,
                                                      static_cast<const float*>(va.data()));
      sp::gather_scatter(ctx, edges, bv, cv);
      check_spmm(g, F, download<float>(ctx, c, bh.size()), 1e-4, "gather_scatter");
    } else {
      std::vector<float> msg(static_cast<size_t>(nnz * F));
      for (int64_t e = 0; e < nnz; ++e)
        for (int64_t f = 0; f < F; ++f) msg[static_cast<size_t>(e * F + f)] = g.values[e] * b_at(g.colind[e], f);
      const sp::Buffer src = upload(ctx, msg);
      const auto index = sp::make_index<int32_t>(nnz, static_cast<const int32_t*>(rowd.data()));
      const auto srcv = sp::make_dense<float>(nnz, F, F, static_cast<const float*>(src.data()));
      sp::segment_reduce(ctx, index, srcv, cv);
      check_spmm(g, F, download<float>(ctx, c, bh.size()), 1e-4, "segment_reduce");
      sp::scatter_reduce(ctx, index, srcv, cv);
      check_spmm(g, F, download<float>(ctx, c, bh.size()), 1e-4, "scatter_reduce");
    }
  } else if (family == "attention") {
    // Q = K = 0: every weight in a row is equal, so out is the mean of V over the row's columns.
    const std::vector<float> zeros(bh.size(), 0.0f);
    const sp::Buffer z = upload(ctx, zeros);
    const auto zv = sp::make_dense<float>(g.n, F, F, static_cast<const float*>(z.data()));
    sp::csr_attention(ctx, a, zv, zv, bv, cv);
    const std::vector<float> o = download<float>(ctx, c, bh.size());
    for (int32_t i = 0; i < g.n; ++i) {
      const int32_t deg = g.rowptr[i + 1] - g.rowptr[i];
      for (int64_t f = 0; f < F; ++f) {
        double want = 0;
        for (int32_t e = g.rowptr[i]; e < g.rowptr[i + 1]; ++e) want += b_at(g.colind[e], f);
        want = deg == 0 ? 0 : want / deg;
        if (std::abs(o[static_cast<size_t>(i * F + f)] - want) > 1e-4) wrong("csr_attention row " + std::to_string(i));
      }
    }
  } else if (family == "structural") {
    const sp::CsrMatrix t = sp::csr_transpose(ctx, a);
    if (t.nnz != nnz) wrong("csr_transpose nnz");
    const std::vector<int32_t> rows{7, 0, 7, 1499};
    const sp::Buffer rd = upload(ctx, rows);
    const sp::CsrMatrix s = sp::csr_slice_rows(ctx, a, sp::make_index<int32_t>(4, static_cast<const int32_t*>(rd.data())));
    const int64_t want = 2 * (g.rowptr[8] - g.rowptr[7]) + (g.rowptr[1] - g.rowptr[0]) + (g.rowptr[1500] - g.rowptr[1499]);
    if (s.nnz != want) wrong("csr_slice_rows nnz " + std::to_string(s.nnz) + " != " + std::to_string(want));
    const std::vector<int32_t> vertices{0, 1, 7, 1499};  // distinct, as the op requires
    const sp::Buffer vd = upload(ctx, vertices);
    const sp::CsrMatrix sub = sp::csr_induced_subgraph(ctx, a, sp::make_index<int32_t>(4, static_cast<const int32_t*>(vd.data())));
    int64_t inside = 0;
    for (int32_t r : vertices)
      for (int32_t e = g.rowptr[r]; e < g.rowptr[r + 1]; ++e)
        inside += std::count(vertices.begin(), vertices.end(), g.colind[e]);
    if (sub.nnz != inside) wrong("csr_induced_subgraph nnz " + std::to_string(sub.nnz) + " != " + std::to_string(inside));
  } else if (family == "plan") {
    sp::SpmmPlan plan(ctx, a, F);
    for (int k = 0; k < 3; ++k) plan.run(bv, cv);
    check_spmm(g, F, download<float>(ctx, c, bh.size()), 1e-4, "SpmmPlan");
  } else {
    throw std::invalid_argument("unknown op family '" + family + "'");
  }
}

}  // namespace sparseport::test
