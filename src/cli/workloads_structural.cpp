// SPDX-License-Identifier: Apache-2.0
// The workloads of the structural ops: csr_slice_rows_dense (a dense output, compared within a
// tolerance), and csr_slice_rows, csr_induced_subgraph and csr_transpose, whose CSR results are
// copies of input entries and so are compared exactly, order included. Separate because only
// they select rows or vertices and only they produce CSR results (CsrOut, compare_csr).
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "workloads_internal.hpp"

namespace sparseport::cli::workload_impl {
namespace {

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
std::unique_ptr<Workload> make_slice_dense_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec) {
  return std::make_unique<SliceDenseWork<I, V>>(ctx, a, spec);
}

template <class I, class V>
std::unique_ptr<Workload> make_select_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec) {
  return std::make_unique<SelectWork<I, V>>(ctx, a, spec);
}

template <class I, class V>
std::unique_ptr<Workload> make_transpose_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec) {
  return std::make_unique<TransposeWork<I, V>>(ctx, a, spec);
}

#define SPARSEPORT_INSTANTIATE(I, V) \
  template std::unique_ptr<Workload> make_slice_dense_work<I, V>(const Context&, const HostCsr<I, V>&, const WorkloadSpec&); \
  template std::unique_ptr<Workload> make_select_work<I, V>(const Context&, const HostCsr<I, V>&, const WorkloadSpec&); \
  template std::unique_ptr<Workload> make_transpose_work<I, V>(const Context&, const HostCsr<I, V>&, const WorkloadSpec&);
SPARSEPORT_CLI_WORKLOAD_TYPES(SPARSEPORT_INSTANTIATE)
#undef SPARSEPORT_INSTANTIATE

}  // namespace sparseport::cli::workload_impl
