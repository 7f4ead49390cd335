// SPDX-License-Identifier: Apache-2.0
#include "workloads.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <type_traits>
#include <utility>
#include <vector>

#include "progress.hpp"

namespace sparseport::cli {

bool op_uses_features(sparseport_op op) {
  switch (op) {
    case SPARSEPORT_OP_SPMM:
    case SPARSEPORT_OP_SDDMM:
    case SPARSEPORT_OP_SEGMENT_REDUCE:
    case SPARSEPORT_OP_SCATTER_REDUCE:
    case SPARSEPORT_OP_GATHER_SCATTER:
    case SPARSEPORT_OP_CSR_ATTENTION: return true;
    default: return false;
  }
}

bool op_uses_reduce(sparseport_op op) {
  return op == SPARSEPORT_OP_SPMM || op == SPARSEPORT_OP_SEGMENT_REDUCE || op == SPARSEPORT_OP_SCATTER_REDUCE ||
         op == SPARSEPORT_OP_GATHER_SCATTER;
}

namespace {

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
uint64_t operand_seed(uint64_t seed, uint64_t k) { return SplitMix(seed ^ (k * 0xD1B54A32D192ED03ULL)).next(); }

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

const Context& reference_context() {
  static const Context ctx = Context::create("reference");
  return ctx;
}

// The oracle: the reference's double-accumulating variant where it has one, else its default.
std::string reference_variant(sparseport_op op) {
  const std::string want = std::string(op_name(op)) + ".serial_f64acc";
  for (const std::string& v : plugin("reference").variants_of(op))
    if (v == want) return v;
  return {};
}

std::string reference_label(sparseport_op op) {
  std::string v = reference_variant(op);
  if (!v.empty()) return "reference/" + v;
  for (const VariantInfo& info : plugin("reference").variants)
    if (info.op == op && info.is_default) return "reference/" + info.name;
  return "reference";
}

// The bound on |result| from absolute values: for max and min the largest |term| bounds the answer.
Reduce bound_reduce(Reduce r) { return r == Reduce::sum || r == Reduce::mean ? r : Reduce::max; }

std::string fmt(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

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

// Structural results are copies of input entries, so they must match exactly, order included
// (ops.hpp fixes the order within rows).
template <class I>
Verdict compare_csr(const char* what, const HostCsr<I, double>& got, const HostCsr<I, double>& want) {
  Verdict v;
  v.exact = true;
  const auto shape = [](const HostCsr<I, double>& m) {
    return std::to_string(m.rows) + "x" + std::to_string(m.cols) + " with " + std::to_string(m.nnz()) + " entries";
  };
  if (got.rows != want.rows || got.cols != want.cols || got.nnz() != want.nnz()) {
    v.detail = std::string(what) + " is " + shape(got) + " but the reference result is " + shape(want);
    v.worst_ratio = std::numeric_limits<double>::infinity();
    return v;
  }
  if (got.is_pattern() != want.is_pattern()) {
    v.detail = std::string(what) + (got.is_pattern() ? " has no values" : " has values") + " but the reference result " +
               (want.is_pattern() ? "is a pattern" : "has values");
    v.worst_ratio = std::numeric_limits<double>::infinity();
    return v;
  }
  for (int64_t i = 0; i < got.rows; ++i) {
    const auto b = static_cast<size_t>(want.rowptr[static_cast<size_t>(i)]);
    const auto e = static_cast<size_t>(want.rowptr[static_cast<size_t>(i) + 1]);
    if (got.rowptr[static_cast<size_t>(i)] != want.rowptr[static_cast<size_t>(i)] ||
        got.rowptr[static_cast<size_t>(i) + 1] != want.rowptr[static_cast<size_t>(i) + 1]) {
      v.detail = std::string(what) + " row " + std::to_string(i) + " spans entries [" +
                 std::to_string(got.rowptr[static_cast<size_t>(i)]) + ", " +
                 std::to_string(got.rowptr[static_cast<size_t>(i) + 1]) + ") but the reference's spans [" +
                 std::to_string(b) + ", " + std::to_string(e) + ")";
      v.worst_ratio = std::numeric_limits<double>::infinity();
      return v;
    }
    for (size_t k = b; k < e; ++k) {
      const bool col_ok = got.colind[k] == want.colind[k];
      const bool val_ok = got.is_pattern() || got.values[k] == want.values[k];
      if (col_ok && val_ok) continue;
      v.detail = std::string(what) + " entry " + std::to_string(k) + " (row " + std::to_string(i) + ") is (col " +
                 std::to_string(got.colind[k]) + (got.is_pattern() ? "" : ", " + fmt(got.values[k])) +
                 ") but the reference's is (col " + std::to_string(want.colind[k]) +
                 (want.is_pattern() ? "" : ", " + fmt(want.values[k])) + ")";
      v.worst_ratio = std::numeric_limits<double>::infinity();
      return v;
    }
  }
  v.ok = true;
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
    Verdict v = compare_dense(what_, out_.data, out_.cols, want_, bound_, kRelTol<V>);
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

template <class I, class V>
class SpmmWork final : public DenseOut<I, V> {
 public:
  SpmmWork(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec) : DenseOut<I, V>(ctx, a, spec, "C") {
    b_ = HostDense<V>(a.cols, spec.features);
    fill_random(b_, this->seed(1));
    b_dev_ = this->stage_.place(std::as_const(b_.data));
    this->init_out(a.rows, spec.features);
  }
  void run(const std::string& variant) override {
    spmm(this->ctx_, this->a_dev_, make_dense<V>(b_.rows, b_.cols, b_.cols, b_dev_), this->out_view(),
         SpmmOptions{this->spec_.reduce, 1.0, 0.0, variant});
  }
  std::optional<double> flops() const override { return 2.0 * this->nnz() * static_cast<double>(this->features()); }
  double gathered_bytes() const override { return sizeof(V) * static_cast<double>(this->features()) * this->nnz(); }
  std::optional<DenseView> host_input() const override { return b_.view(); }

 private:
  std::vector<double> expected(bool absolute) override {
    const F64Csr a = to_f64(this->a_, absolute);
    const HostDense<double> b = to_f64(b_, absolute);
    HostDense<double> c(this->a_.rows, this->features());
    spmm(reference_context(), a.view, b.view(), c.mut(),
         SpmmOptions{absolute ? bound_reduce(this->spec_.reduce) : this->spec_.reduce, 1.0, 0.0,
                     reference_variant(SPARSEPORT_OP_SPMM)});
    return std::move(c.data);
  }

  HostDense<V> b_;
  const V* b_dev_ = nullptr;
};

template <class I, class V>
class SddmmWork final : public DenseOut<I, V> {
 public:
  SddmmWork(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec)
      : DenseOut<I, V>(ctx, a, spec, "out") {
    x_ = HostDense<V>(a.rows, spec.features);
    y_ = HostDense<V>(a.cols, spec.features);
    fill_random(x_, this->seed(1));
    fill_random(y_, this->seed(2));
    x_dev_ = this->stage_.place(std::as_const(x_.data));
    y_dev_ = this->stage_.place(std::as_const(y_.data));
    this->init_out(a.nnz(), 1);
  }
  void run(const std::string& variant) override {
    sddmm(this->ctx_, this->a_dev_, make_dense<V>(x_.rows, x_.cols, x_.cols, x_dev_),
          make_dense<V>(y_.rows, y_.cols, y_.cols, y_dev_), this->out_view(), OpOptions{variant});
  }
  std::optional<double> flops() const override { return 2.0 * this->nnz() * static_cast<double>(this->features()); }
  double gathered_bytes() const override { return sizeof(V) * static_cast<double>(this->features()) * this->nnz(); }
  std::optional<DenseView> host_input() const override { return y_.view(); }
  std::optional<DenseView> host_row_input() const override { return x_.view(); }

 private:
  std::vector<double> expected(bool absolute) override {
    const F64Csr a = to_f64(this->a_, absolute);
    const HostDense<double> x = to_f64(x_, absolute), y = to_f64(y_, absolute);
    HostDense<double> out(this->a_.nnz(), 1);
    sddmm(reference_context(), a.view, x.view(), y.view(), out.mut(), OpOptions{reference_variant(SPARSEPORT_OP_SDDMM)});
    return std::move(out.data);
  }

  HostDense<V> x_, y_;
  const V* x_dev_ = nullptr;
  const V* y_dev_ = nullptr;
};

// segment_reduce (sorted) and scatter_reduce (shuffled) over the graph's edges.
template <class I, class V>
class SegmentWork final : public DenseOut<I, V> {
 public:
  SegmentWork(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec, bool sorted)
      : DenseOut<I, V>(ctx, a, spec, "out"), sorted_(sorted) {
    const int64_t edges = a.nnz();
    const int64_t f = spec.features;
    HostDense<V> x(a.cols, f);
    fill_random(x, this->seed(1));
    std::vector<int64_t> order(static_cast<size_t>(edges));
    std::iota(order.begin(), order.end(), int64_t{0});
    if (!sorted) order = distinct_sample<int64_t>(edges, edges, this->seed(2));
    std::vector<I> dst(static_cast<size_t>(edges));
    for (int64_t i = 0; i < a.rows; ++i)
      for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
        dst[static_cast<size_t>(e)] = static_cast<I>(i);
    index_.resize(static_cast<size_t>(edges));
    src_ = HostDense<V>(edges, f);
    for (int64_t t = 0; t < edges; ++t) {
      const auto e = static_cast<size_t>(order[static_cast<size_t>(t)]);
      index_[static_cast<size_t>(t)] = dst[e];
      const V w = a.is_pattern() ? V(1) : a.values[e];
      const V* xr = &x(static_cast<int64_t>(a.colind[e]), 0);
      V* sr = &src_(t, 0);
      for (int64_t j = 0; j < f; ++j) sr[j] = V(w * xr[j]);
    }
    index_dev_ = this->stage_.place(std::as_const(index_));
    src_dev_ = this->stage_.place(std::as_const(src_.data));
    this->init_out(a.rows, f);
  }
  void run(const std::string& variant) override {
    const IndexView index = make_index<I>(static_cast<int64_t>(index_.size()), index_dev_);
    const DenseView src = make_dense<V>(src_.rows, src_.cols, src_.cols, src_dev_);
    const ReduceOptions opt{this->spec_.reduce, variant};
    if (sorted_)
      segment_reduce(this->ctx_, index, src, this->out_view(), opt);
    else
      scatter_reduce(this->ctx_, index, src, this->out_view(), opt);
  }
  std::optional<double> flops() const override { return this->nnz() * static_cast<double>(this->features()); }
  double gathered_bytes() const override { return sizeof(V) * static_cast<double>(this->features()) * this->nnz(); }
  // Sorted, the messages are in the graph's storage order (message e belongs to entry e).
  std::optional<DenseView> host_input() const override {
    return sorted_ ? std::optional<DenseView>(src_.view()) : std::nullopt;
  }

 private:
  std::vector<double> expected(bool absolute) override {
    const HostDense<double> src = to_f64(src_, absolute);
    HostDense<double> out(this->a_.rows, this->features());
    const IndexView index = make_index<I>(static_cast<int64_t>(index_.size()), index_.data());
    const sparseport_op op = sorted_ ? SPARSEPORT_OP_SEGMENT_REDUCE : SPARSEPORT_OP_SCATTER_REDUCE;
    const ReduceOptions opt{absolute ? bound_reduce(this->spec_.reduce) : this->spec_.reduce, reference_variant(op)};
    if (sorted_)
      segment_reduce(reference_context(), index, src.view(), out.mut(), opt);
    else
      scatter_reduce(reference_context(), index, src.view(), out.mut(), opt);
    return std::move(out.data);
  }

  bool sorted_;
  std::vector<I> index_;
  HostDense<V> src_;
  const I* index_dev_ = nullptr;
  const V* src_dev_ = nullptr;
};

template <class I, class V>
class GatherScatterWork final : public DenseOut<I, V> {
 public:
  GatherScatterWork(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec)
      : DenseOut<I, V>(ctx, a, spec, "out") {
    dst_.resize(static_cast<size_t>(a.nnz()));
    for (int64_t i = 0; i < a.rows; ++i)
      for (I e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
        dst_[static_cast<size_t>(e)] = static_cast<I>(i);
    x_ = HostDense<V>(a.cols, spec.features);
    fill_random(x_, this->seed(1));
    dst_dev_ = this->stage_.place(std::as_const(dst_));
    x_dev_ = this->stage_.place(std::as_const(x_.data));
    this->init_out(a.rows, spec.features);
  }
  void run(const std::string& variant) override {
    // The graph's column and value arrays are the edge list's src and weights: no second copy.
    const CooView edges = make_coo<I, V>(this->a_.rows, this->a_.cols, this->a_.nnz(), dst_dev_,
                                         static_cast<const I*>(this->a_dev_.colind),
                                         static_cast<const V*>(this->a_dev_.values));
    gather_scatter(this->ctx_, edges, make_dense<V>(x_.rows, x_.cols, x_.cols, x_dev_), this->out_view(),
                   ReduceOptions{this->spec_.reduce, variant});
  }
  std::optional<double> flops() const override { return 2.0 * this->nnz() * static_cast<double>(this->features()); }
  double gathered_bytes() const override { return sizeof(V) * static_cast<double>(this->features()) * this->nnz(); }
  std::optional<DenseView> host_input() const override { return x_.view(); }

 private:
  std::vector<double> expected(bool absolute) override {
    const F64Csr a = to_f64(this->a_, absolute);
    const HostDense<double> x = to_f64(x_, absolute);
    HostDense<double> out(this->a_.rows, this->features());
    const CooView edges = make_coo<I, double>(this->a_.rows, this->a_.cols, this->a_.nnz(), dst_.data(),
                                              this->a_.colind.data(), static_cast<const double*>(a.view.values));
    gather_scatter(reference_context(), edges, x.view(), out.mut(),
                   ReduceOptions{absolute ? bound_reduce(this->spec_.reduce) : this->spec_.reduce,
                                 reference_variant(SPARSEPORT_OP_GATHER_SCATTER)});
    return std::move(out.data);
  }

  std::vector<I> dst_;
  HostDense<V> x_;
  const I* dst_dev_ = nullptr;
  const V* x_dev_ = nullptr;
};

template <class I, class V>
class AttentionWork final : public DenseOut<I, V> {
 public:
  AttentionWork(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec)
      : DenseOut<I, V>(ctx, a, spec, "out") {
    q_ = HostDense<V>(a.rows, spec.features);
    k_ = HostDense<V>(a.cols, spec.features);
    v_ = HostDense<V>(a.cols, spec.features);
    fill_random(q_, this->seed(1));
    fill_random(k_, this->seed(2));
    fill_random(v_, this->seed(3));
    q_dev_ = this->stage_.place(std::as_const(q_.data));
    k_dev_ = this->stage_.place(std::as_const(k_.data));
    v_dev_ = this->stage_.place(std::as_const(v_.data));
    this->init_out(a.rows, spec.features);
  }
  void run(const std::string& variant) override {
    csr_attention(this->ctx_, this->a_dev_, make_dense<V>(q_.rows, q_.cols, q_.cols, q_dev_),
                  make_dense<V>(k_.rows, k_.cols, k_.cols, k_dev_), make_dense<V>(v_.rows, v_.cols, v_.cols, v_dev_),
                  this->out_view(), AttentionOptions{0.0, variant});
  }
  std::optional<double> flops() const override { return 4.0 * this->nnz() * static_cast<double>(this->features()); }
  double gathered_bytes() const override {
    return 2.0 * sizeof(V) * static_cast<double>(this->features()) * this->nnz();
  }

 private:
  std::vector<double> expected(bool) override {
    const F64Csr a = to_f64(this->a_, false);
    const HostDense<double> q = to_f64(q_, false), k = to_f64(k_, false), v = to_f64(v_, false);
    HostDense<double> out(this->a_.rows, this->features());
    csr_attention(reference_context(), a.view, q.view(), k.view(), v.view(), out.mut(),
                  AttentionOptions{0.0, reference_variant(SPARSEPORT_OP_CSR_ATTENTION)});
    return std::move(out.data);
  }
  // Each output is a convex combination of rows of V, so max |V| bounds every element; the softmax
  // weights carry a relative error of a few eps each.
  std::vector<double> bound() override {
    double m = 0;
    for (const V x : v_.data) m = std::max(m, std::fabs(static_cast<double>(x)));
    return {m};
  }

  HostDense<V> q_, k_, v_;
  const V* q_dev_ = nullptr;
  const V* k_dev_ = nullptr;
  const V* v_dev_ = nullptr;
};

// The default sample of the slicing ops: a mini-batch of rows, or the probe's induced subgraph
// (about 3% of the rows, at least 512; DESIGN.md section 4).
int64_t sample_size(sparseport_op op, int64_t requested, int64_t rows) {
  if (requested > rows)
    throw InvalidArgument("sparseport run: --sample " + std::to_string(requested) + " is more than the graph's " +
                          std::to_string(rows) + " rows (the sample is of distinct rows)");
  if (requested > 0) return requested;
  if (op == SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH)
    return std::min(rows, std::max<int64_t>(512, static_cast<int64_t>(std::ceil(0.03 * static_cast<double>(rows)))));
  return std::min<int64_t>(rows, 1024);
}

template <class I, class V>
class SliceDenseWork final : public DenseOut<I, V> {
 public:
  SliceDenseWork(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec)
      : DenseOut<I, V>(ctx, a, spec, "out") {
    const int64_t s = sample_size(spec.op, spec.sample, a.rows);
    constexpr double kMaxBytes = 8.0 * (1 << 30);
    const double bytes = static_cast<double>(s) * static_cast<double>(a.cols) * sizeof(V);
    if (bytes > kMaxBytes)
      throw InvalidArgument("sparseport run: csr_slice_rows_dense needs a " + std::to_string(s) + " x " +
                            std::to_string(a.cols) + " dense output (" + fmt(bytes / (1 << 30)) +
                            " GiB, more than the 8 GiB this program allows); pass a smaller --sample");
    rows_ = distinct_sample<I>(a.rows, s, this->seed(1));
    rows_dev_ = this->stage_.place(std::as_const(rows_));
    this->init_out(s, a.cols);
  }
  void run(const std::string& variant) override {
    csr_slice_rows_dense(this->ctx_, this->a_dev_, make_index<I>(static_cast<int64_t>(rows_.size()), rows_dev_),
                         this->out_view(), OpOptions{variant});
  }
  std::optional<double> flops() const override { return std::nullopt; }
  double gathered_bytes() const override { return this->selected_entries(rows_) * this->entry_bytes(this->a_); }
  int64_t selected() const override { return static_cast<int64_t>(rows_.size()); }

 private:
  std::vector<double> expected(bool absolute) override {
    const F64Csr a = to_f64(this->a_, absolute);
    HostDense<double> out(static_cast<int64_t>(rows_.size()), this->a_.cols);
    csr_slice_rows_dense(reference_context(), a.view, make_index<I>(static_cast<int64_t>(rows_.size()), rows_.data()),
                         out.mut(), OpOptions{reference_variant(SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE)});
    return std::move(out.data);
  }

  std::vector<I> rows_;
  const I* rows_dev_ = nullptr;
};

// Ops whose result is a CSR matrix in backend memory.
template <class I, class V>
class CsrOut : public Base<I, V> {
 public:
  void reset() override { last_ = CsrMatrix{}; }
  Verdict verify() override {
    if (!want_) {
      Progress p("computing the reference result (" + reference_label(this->spec_.op) + ")", this->spec_.show_progress);
      want_ = expected();
    }
    const HostCsr<I, double> got = this->ctx_.template to_host<I, double>(last_);
    Verdict v = compare_csr(what_, got, *want_);
    v.reference_variant = reference_label(this->spec_.op);
    return v;
  }
  std::optional<double> flops() const override { return std::nullopt; }

 protected:
  CsrOut(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec, const char* what)
      : Base<I, V>(ctx, a, spec), what_(what) {}
  virtual HostCsr<I, double> expected() = 0;

  CsrMatrix last_;

 private:
  const char* what_;
  std::optional<HostCsr<I, double>> want_;
};

// csr_slice_rows (vertices = false) and csr_induced_subgraph (vertices = true) on a seeded sample.
template <class I, class V>
class SelectWork final : public CsrOut<I, V> {
 public:
  SelectWork(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec)
      : CsrOut<I, V>(ctx, a, spec, "the result") {
    rows_ = distinct_sample<I>(a.rows, sample_size(spec.op, spec.sample, a.rows), this->seed(1));
    rows_dev_ = this->stage_.place(std::as_const(rows_));
  }
  void run(const std::string& variant) override {
    const IndexView sel = make_index<I>(static_cast<int64_t>(rows_.size()), rows_dev_);
    if (this->spec_.op == SPARSEPORT_OP_CSR_SLICE_ROWS)
      this->last_ = csr_slice_rows(this->ctx_, this->a_dev_, sel, OpOptions{variant});
    else
      this->last_ = csr_induced_subgraph(this->ctx_, this->a_dev_, sel, OpOptions{variant});
  }
  double gathered_bytes() const override { return this->selected_entries(rows_) * this->entry_bytes(this->a_); }
  int64_t selected() const override { return static_cast<int64_t>(rows_.size()); }

 private:
  HostCsr<I, double> expected() override {
    const F64Csr a = to_f64(this->a_, false);
    const IndexView sel = make_index<I>(static_cast<int64_t>(rows_.size()), rows_.data());
    const OpOptions opt{reference_variant(this->spec_.op)};
    const Context& ref = reference_context();
    if (this->spec_.op == SPARSEPORT_OP_CSR_SLICE_ROWS) return ref.to_host<I, double>(csr_slice_rows(ref, a.view, sel, opt));
    return ref.to_host<I, double>(csr_induced_subgraph(ref, a.view, sel, opt));
  }

  std::vector<I> rows_;
  const I* rows_dev_ = nullptr;
};

template <class I, class V>
class TransposeWork final : public CsrOut<I, V> {
 public:
  TransposeWork(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec)
      : CsrOut<I, V>(ctx, a, spec, "A^T") {}
  void run(const std::string& variant) override {
    this->last_ = csr_transpose(this->ctx_, this->a_dev_, OpOptions{variant});
  }
  double gathered_bytes() const override { return this->nnz() * this->entry_bytes(this->a_); }

 private:
  HostCsr<I, double> expected() override {
    const F64Csr a = to_f64(this->a_, false);
    const Context& ref = reference_context();
    return ref.to_host<I, double>(csr_transpose(ref, a.view, OpOptions{reference_variant(SPARSEPORT_OP_CSR_TRANSPOSE)}));
  }
};

}  // namespace

template <class I, class V>
std::unique_ptr<Workload> make_workload(const Context& ctx, const HostCsr<I, V>& graph, const WorkloadSpec& spec) {
  switch (spec.op) {
    case SPARSEPORT_OP_SPMM: return std::make_unique<SpmmWork<I, V>>(ctx, graph, spec);
    case SPARSEPORT_OP_SDDMM: return std::make_unique<SddmmWork<I, V>>(ctx, graph, spec);
    case SPARSEPORT_OP_SEGMENT_REDUCE: return std::make_unique<SegmentWork<I, V>>(ctx, graph, spec, true);
    case SPARSEPORT_OP_SCATTER_REDUCE: return std::make_unique<SegmentWork<I, V>>(ctx, graph, spec, false);
    case SPARSEPORT_OP_GATHER_SCATTER: return std::make_unique<GatherScatterWork<I, V>>(ctx, graph, spec);
    case SPARSEPORT_OP_CSR_ATTENTION: return std::make_unique<AttentionWork<I, V>>(ctx, graph, spec);
    case SPARSEPORT_OP_CSR_SLICE_ROWS:
    case SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH: return std::make_unique<SelectWork<I, V>>(ctx, graph, spec);
    case SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE: return std::make_unique<SliceDenseWork<I, V>>(ctx, graph, spec);
    case SPARSEPORT_OP_CSR_TRANSPOSE: return std::make_unique<TransposeWork<I, V>>(ctx, graph, spec);
    case SPARSEPORT_OP_COUNT: break;
  }
  throw InvalidArgument("sparseport run: op id " + std::to_string(static_cast<int>(spec.op)) + " is not a known op");
}

template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int32_t, float>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int32_t, double>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int64_t, float>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int64_t, double>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int32_t, half>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int32_t, bfloat16>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int64_t, half>&, const WorkloadSpec&);
template std::unique_ptr<Workload> make_workload(const Context&, const HostCsr<int64_t, bfloat16>&, const WorkloadSpec&);

}  // namespace sparseport::cli
