// SPDX-License-Identifier: Apache-2.0
// The workloads of the products through the sparse pattern: spmm, sddmm and csr_attention, each
// with random dense operands and a dense output checked against the reference within a
// tolerance. Separate from the message-passing and structural ops: these are the ones whose
// operands are plain dense matrices indexed by the graph's rows and columns.
#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "workloads_internal.hpp"

namespace sparseport::cli::workload_impl {
namespace {

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

}  // namespace

template <class I, class V>
std::unique_ptr<Workload> make_spmm_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec) {
  return std::make_unique<SpmmWork<I, V>>(ctx, a, spec);
}

template <class I, class V>
std::unique_ptr<Workload> make_sddmm_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec) {
  return std::make_unique<SddmmWork<I, V>>(ctx, a, spec);
}

template <class I, class V>
std::unique_ptr<Workload> make_attention_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec) {
  return std::make_unique<AttentionWork<I, V>>(ctx, a, spec);
}

#define SPARSEPORT_INSTANTIATE(I, V) \
  template std::unique_ptr<Workload> make_spmm_work<I, V>(const Context&, const HostCsr<I, V>&, const WorkloadSpec&); \
  template std::unique_ptr<Workload> make_sddmm_work<I, V>(const Context&, const HostCsr<I, V>&, const WorkloadSpec&); \
  template std::unique_ptr<Workload> make_attention_work<I, V>(const Context&, const HostCsr<I, V>&, const WorkloadSpec&);
SPARSEPORT_CLI_WORKLOAD_TYPES(SPARSEPORT_INSTANTIATE)
#undef SPARSEPORT_INSTANTIATE

}  // namespace sparseport::cli::workload_impl
