// SPDX-License-Identifier: Apache-2.0
// What the workload files share: the seeded samples, the tolerances, the reference backend that
// computes the expected results, the dense comparison, the staging of host arrays in backend
// memory, and the Base and DenseOut classes every workload builds on; one factory per workload,
// each defined with its op family (workloads_products.cpp: spmm, sddmm, csr_attention;
// workloads_messages.cpp: segment_reduce, scatter_reduce, gather_scatter; workloads_structural.cpp:
// the slicing ops and csr_transpose). workloads.cpp dispatches an op to its factory.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "progress.hpp"
#include "workloads.hpp"

namespace sparseport::cli::workload_impl {

// splitmix64 for shuffles and samples: std::shuffle and the std distributions differ between
// standard libraries, and a run must pick the same rows on every machine for a given seed.
class SplitMix {
 public:
  explicit SplitMix(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n): rejecting the 2^64 mod n lowest draws removes the modulo bias.
  uint64_t below(uint64_t n) {
    const uint64_t reject_below = (0 - n) % n;
    uint64_t x = next();
    while (x < reject_below) x = next();
    return x % n;
  }

 private:
  uint64_t state_;
};

// Each operand gets its own stream, so X and Y of one run are never the same matrix.
inline uint64_t operand_seed(uint64_t seed, uint64_t k) { return SplitMix(seed ^ (k * 0xD1B54A32D192ED03ULL)).next(); }

// s distinct values of [0, n) in random order (a partial Fisher-Yates shuffle).
template <class I>
std::vector<I> distinct_sample(int64_t n, int64_t s, uint64_t seed) {
  std::vector<I> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), I(0));
  SplitMix rng(seed);
  for (int64_t i = 0; i < s; ++i) {
    const int64_t j = i + static_cast<int64_t>(rng.below(static_cast<uint64_t>(n - i)));
    std::swap(all[static_cast<size_t>(i)], all[static_cast<size_t>(j)]);
  }
  all.resize(static_cast<size_t>(s));
  return all;
}

// float: eps is 6e-8; the error of a sum grows with the number of terms (and with a different
// summation order per variant), so 1e-4 of the sum of |terms| leaves room for hub rows of 1e5
// entries while a dropped or doubled term in a row of up to ~1e4 entries still fails.
// double: the same reasoning from eps 1.1e-16.
// 16 bits: the result is rounded once into the type (unit roundoff 2^-11 for half, 2^-8 for
// bfloat16) after a float32 sum; 4 units of it, relative to the sum of |terms|.
template <class V>
constexpr double kRelTol = std::is_same_v<V, float>      ? 1e-4
                           : std::is_same_v<V, double>   ? 1e-10
                           : std::is_same_v<V, half>     ? 4 * 0x1p-11
                                                         : 4 * 0x1p-8;
// float spmm where the context allows TF32 (a TF32 variant may have run, named or chosen): each
// product of inputs rounded to TF32 is within 2^-10 (+ 2^-22) of the exact one relative to |a b|
// (README "TF32"), on top of the float32 sum's error that kRelTol<float> already covers.
constexpr double kTf32RelTol = 0x1p-10 + 0x1p-22 + kRelTol<float>;

// A NaN of V: the fill that shows an element the op did not write.
template <class V>
V nan_of() {
  if constexpr (std::is_same_v<V, half>)
    return half::from_bits(0x7e00);
  else if constexpr (std::is_same_v<V, bfloat16>)
    return bfloat16::from_bits(0x7fc0);
  else
    return std::numeric_limits<V>::quiet_NaN();
}
// An element whose terms are all zero must come out (nearly) zero; half rounds results below 2^-14
// to multiples of 2^-24 (its subnormals), so an error of one of those is its rounding too.
template <class V>
constexpr double kAbsTol = std::is_same_v<V, half> ? 0x1p-24 : 1e-30;

const Context& reference_context();

// The oracle: the reference's double-accumulating variant where it has one, else its default.
std::string reference_variant(sparseport_op op);

std::string reference_label(sparseport_op op);

// The bound on |result| from absolute values: for max and min the largest |term| bounds the answer.
inline Reduce bound_reduce(Reduce r) { return r == Reduce::sum || r == Reduce::mean ? r : Reduce::max; }

std::string fmt(double v);

template <class V>
HostDense<double> to_f64(const HostDense<V>& m, bool absolute) {
  HostDense<double> d(m.rows, m.cols, m.ld);
  for (size_t i = 0; i < m.data.size(); ++i) {
    const double x = static_cast<double>(m.data[i]);
    d.data[i] = absolute ? std::fabs(x) : x;
  }
  return d;
}

// A double copy of a CSR's values that shares the host structure (no second copy of the indices).
struct F64Csr {
  std::vector<double> values;
  CsrView view;
};

template <class I, class V>
F64Csr to_f64(const HostCsr<I, V>& a, bool absolute) {
  F64Csr d;
  d.values.reserve(a.values.size());
  for (const V x : a.values) d.values.push_back(absolute ? std::fabs(static_cast<double>(x)) : static_cast<double>(x));
  d.view = make_csr<I, double>(a.rows, a.cols, a.nnz(), a.rowptr.data(), a.colind.data(),
                               a.is_pattern() ? nullptr : d.values.data());
  return d;
}

template <class V>
Verdict compare_dense(const char* what, const std::vector<V>& got, int64_t cols, const std::vector<double>& want,
                      const std::vector<double>& bound, double rtol) {
  Verdict v;
  if (got.size() != want.size()) {
    v.detail = std::string(what) + " has " + std::to_string(got.size()) + " elements but the reference result has " +
               std::to_string(want.size());
    return v;
  }
  int64_t bad = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = static_cast<double>(got[i]);
    const double tol = rtol * std::fabs(bound.size() == 1 ? bound[0] : bound[i]) + kAbsTol<V>;
    const double err = std::fabs(g - want[i]);
    const double ratio = std::isnan(err) ? std::numeric_limits<double>::infinity() : err / tol;
    if (!std::isnan(err)) v.max_abs_err = std::max(v.max_abs_err, err);
    v.worst_ratio = std::max(v.worst_ratio, ratio);
    if (err <= tol) continue;
    if (bad++ == 0) {
      const int64_t idx = static_cast<int64_t>(i);
      v.detail = std::string(what) + "[" + std::to_string(idx / std::max<int64_t>(cols, 1)) + "," +
                 std::to_string(idx % std::max<int64_t>(cols, 1)) + "] is " + fmt(g) + " but the reference gives " +
                 fmt(want[i]) + " (tolerance " + fmt(tol) + ")";
    }
  }
  if (bad > 0) v.detail += "; " + std::to_string(bad) + " of " + std::to_string(got.size()) + " elements differ";
  v.ok = bad == 0;
  return v;
}

// Places host arrays where the backend's ops read them: the host arrays themselves on a host
// backend, copies in backend memory (ctx.allocate + copy_to_backend) on a device backend.
class Staging {
 public:
  explicit Staging(Context ctx) : ctx_(std::move(ctx)) {}

  template <class T>
  const T* place(const std::vector<T>& host) {
    const T* copy = copy_in(host);
    return copy != nullptr ? copy : host.data();
  }
  template <class T>
  T* place(std::vector<T>& host) {
    T* copy = copy_in(host);
    return copy != nullptr ? copy : host.data();
  }
  // Backend memory -> host vector (nothing to do on a host backend: they are the same memory).
  template <class T>
  void fetch(std::vector<T>& host, const T* placed) const {
    if (placed != host.data()) ctx_.copy_to_host(host.data(), placed, host.size() * sizeof(T));
  }
  template <class T>
  void store(T* placed, const std::vector<T>& host) const {
    if (placed != host.data()) ctx_.copy_to_backend(placed, host.data(), host.size() * sizeof(T));
  }

 private:
  // A copy in backend memory on a device backend; null on a host backend (use the host array).
  template <class T>
  T* copy_in(const std::vector<T>& host) {
    if (!ctx_.device_memory() || host.empty()) return nullptr;
    Buffer b = ctx_.allocate(host.size() * sizeof(T));
    ctx_.copy_to_backend(b.data(), host.data(), host.size() * sizeof(T));
    T* p = static_cast<T*>(b.data());
    buffers_.push_back(std::move(b));
    return p;
  }

  Context ctx_;
  std::vector<Buffer> buffers_;
};

template <class I, class V>
class Base : public Workload {
 protected:
  Base(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec)
      : ctx_(ctx), stage_(ctx), a_(a), spec_(spec) {
    a_dev_ = a.view();
    a_dev_.rowptr = stage_.place(a.rowptr);
    a_dev_.colind = stage_.place(a.colind);
    if (!a.is_pattern()) a_dev_.values = stage_.place(a.values);
  }

  int64_t features() const { return spec_.features; }
  double nnz() const { return static_cast<double>(a_.nnz()); }
  uint64_t seed(uint64_t k) const { return operand_seed(spec_.seed, k); }
  // Bytes of one stored entry read by a structural op.
  static double entry_bytes(const HostCsr<I, V>& a) { return sizeof(I) + (a.is_pattern() ? 0.0 : sizeof(V)); }
  double selected_entries(const std::vector<I>& rows) const {
    double n = 0;
    for (const I r : rows)
      n += static_cast<double>(a_.rowptr[static_cast<size_t>(r) + 1] - a_.rowptr[static_cast<size_t>(r)]);
    return n;
  }

  Context ctx_;
  Staging stage_;
  const HostCsr<I, V>& a_;
  WorkloadSpec spec_;
  CsrView a_dev_;
};

// Ops with a dense output, compared element by element within a tolerance relative to the same
// op run on absolute values (sum |terms|): an error bound that scales with each element's terms.
template <class I, class V>
class DenseOut : public Base<I, V> {
 public:
  void reset() override {
    std::fill(out_.data.begin(), out_.data.end(), nan_of<V>());
    this->stage_.store(out_dev_, out_.data);
  }

  Verdict verify() override {
    if (!have_reference_) {
      Progress p("computing the reference result (" + reference_label(this->spec_.op) + ")", this->spec_.show_progress);
      want_ = expected(false);
      bound_ = bound();
      have_reference_ = true;
    }
    this->stage_.fetch(out_.data, out_dev_);
    const bool tf32 = std::is_same_v<V, float> && this->spec_.op == SPARSEPORT_OP_SPMM && this->ctx_.allow_tf32();
    Verdict v = compare_dense(what_, out_.data, out_.cols, want_, bound_, tf32 ? kTf32RelTol : kRelTol<V>);
    v.reference_variant = reference_label(this->spec_.op);
    return v;
  }
  // On a host context out_dev_ is out_ itself, so what is written here is what verify() reads.
  std::optional<DenseMutView> host_output() override { return out_.mut(); }

 protected:
  DenseOut(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec, const char* what)
      : Base<I, V>(ctx, a, spec), what_(what) {}

  void init_out(int64_t rows, int64_t cols) {
    out_ = HostDense<V>(rows, cols);
    out_dev_ = this->stage_.place(out_.data);
  }
  DenseMutView out_view() const { return make_dense<V>(out_.rows, out_.cols, out_.cols, out_dev_); }

  // The op on the reference backend in double; absolute: on |operands| with bound_reduce.
  virtual std::vector<double> expected(bool absolute) = 0;
  virtual std::vector<double> bound() { return expected(true); }

 private:
  const char* what_;
  HostDense<V> out_;
  V* out_dev_ = nullptr;
  bool have_reference_ = false;
  std::vector<double> want_, bound_;
};

// The default sample of the slicing ops: a mini-batch of rows, or the probe's induced subgraph
// (about 3% of the rows, at least 512; DESIGN.md section 4).
int64_t sample_size(sparseport_op op, int64_t requested, int64_t rows);

// ---- the workloads, one factory each ----------------------------------------------------------

// The (index, value) types of make_workload; each file instantiates its factories for all of them.
#define SPARSEPORT_CLI_WORKLOAD_TYPES(X)                                                \
  X(int32_t, float) X(int32_t, double) X(int64_t, float) X(int64_t, double)             \
  X(int32_t, half) X(int32_t, bfloat16) X(int64_t, half) X(int64_t, bfloat16)

// workloads_products.cpp
template <class I, class V>
std::unique_ptr<Workload> make_spmm_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec);
template <class I, class V>
std::unique_ptr<Workload> make_sddmm_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec);
template <class I, class V>
std::unique_ptr<Workload> make_attention_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec);
// workloads_messages.cpp: sorted, segment_reduce; else scatter_reduce.
template <class I, class V>
std::unique_ptr<Workload> make_segment_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec, bool sorted);
template <class I, class V>
std::unique_ptr<Workload> make_gather_scatter_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec);
// workloads_structural.cpp: make_select_work for csr_slice_rows and csr_induced_subgraph.
template <class I, class V>
std::unique_ptr<Workload> make_slice_dense_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec);
template <class I, class V>
std::unique_ptr<Workload> make_select_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec);
template <class I, class V>
std::unique_ptr<Workload> make_transpose_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec);

}  // namespace sparseport::cli::workload_impl
