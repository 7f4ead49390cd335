// SPDX-License-Identifier: Apache-2.0
// The workloads of the message-passing ops: segment_reduce and scatter_reduce over the graph's
// edges as materialised messages (sorted, or in a seeded random order), and gather_scatter over
// the edges as COO. Separate because their operands are edge lists built from the graph, not the
// graph itself.
#include <algorithm>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "workloads_internal.hpp"

namespace sparseport::cli::workload_impl {
namespace {

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

}  // namespace

template <class I, class V>
std::unique_ptr<Workload> make_segment_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec, bool sorted) {
  return std::make_unique<SegmentWork<I, V>>(ctx, a, spec, sorted);
}

template <class I, class V>
std::unique_ptr<Workload> make_gather_scatter_work(const Context& ctx, const HostCsr<I, V>& a, const WorkloadSpec& spec) {
  return std::make_unique<GatherScatterWork<I, V>>(ctx, a, spec);
}

#define SPARSEPORT_INSTANTIATE(I, V) \
  template std::unique_ptr<Workload> make_segment_work<I, V>(const Context&, const HostCsr<I, V>&, const WorkloadSpec&, bool); \
  template std::unique_ptr<Workload> make_gather_scatter_work<I, V>(const Context&, const HostCsr<I, V>&, const WorkloadSpec&);
SPARSEPORT_CLI_WORKLOAD_TYPES(SPARSEPORT_INSTANTIATE)
#undef SPARSEPORT_INSTANTIATE

}  // namespace sparseport::cli::workload_impl
