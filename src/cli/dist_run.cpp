// SPDX-License-Identifier: Apache-2.0
// `sparseport run --dist` with MPI: the session (MPI_Init/MPI_Finalize, agreement on failures) and
// the distributed workload. Rank 0 keeps an ordinary workload (make_workload on the reference
// backend) for the operands and the verification, so both come from the same code as `run`.
#include "dist_run.hpp"

#include <mpi.h>
#ifdef __linux__
#include <sched.h>
#endif

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <limits>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "args.hpp"
#include "sparseport/dist.hpp"

namespace sparseport::cli {
namespace {

class MpiSession final : public DistSession {
 public:
  MpiSession() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      int provided = 0;
      // The ops run OpenMP threads, but only this thread calls MPI.
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_mpi_ = true;
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks_);
    MPI_Comm node = MPI_COMM_NULL;
    if (MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) == MPI_SUCCESS) {
      MPI_Comm_rank(node, &node_rank_);
      MPI_Comm_size(node, &node_size_);
      MPI_Comm_free(&node);
    }
  }
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owns_mpi_ && !finalized) MPI_Finalize();
  }

  int rank() const override { return rank_; }
  int ranks() const override { return ranks_; }

  // The launcher may have bound this rank to some cores (Open MPI binds each rank to one core when
  // there are at most 2 ranks): then those cores are its own. Unbound, the node's cores are shared
  // among the ranks on it.
  int default_threads() const override {
    const char* env = std::getenv("OMP_NUM_THREADS");
    if (env != nullptr && *env != '\0') return 0;
    const int here = node_size();
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    int allowed = cores;
#ifdef __linux__
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0) allowed = std::max(1, CPU_COUNT(&set));
#endif
    if (allowed < cores) return allowed;
    return std::max(1, cores / std::max(1, here));
  }

  std::string backend_of_rank(const std::string& backend) const override {
    const Context ctx = Context::create(backend);  // "cuda" -> "cuda:0"; "" -> the default
    if (!ctx.device_memory() || backend.find(':') != std::string::npos) return ctx.backend();
    return ctx.plugin().name + ":" + std::to_string(node_rank() % std::max(ctx.plugin().device_count(), 1));
  }

  int run(const std::function<int()>& body) override {
    try {
      return body();
    } catch (const UsageError&) {
      if (rank_ != 0) return 2;
      throw;
    } catch (const std::exception& e) {
      if (ranks_ == 1 || agreed_) {
        if (rank_ != 0) return 1;
        throw;
      }
      std::fflush(stdout);
      std::fprintf(stderr, "sparseport run --dist: rank %d of %d: error: %s\n", rank_, ranks_, e.what());
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, 1);
      return 1;
    }
  }

  void together(const std::function<void()>& step) override { collective(step); }

  // Runs one step on every rank; when it fails anywhere, every rank throws: the failing rank its
  // own exception, the others the same kind with the lowest failing rank's message.
  template <class F>
  void collective(F&& step) {
    agreed_ = false;
    std::exception_ptr err;
    int kind = 0;  // 1 Unsupported (a variant that does not apply: `--variant all` skips it), 2 other
    std::string what;
    try {
      step();
    } catch (const Unsupported& e) {
      err = std::current_exception();
      kind = 1;
      what = e.what();
    } catch (const std::exception& e) {
      err = std::current_exception();
      kind = 2;
      what = e.what();
    }
    const int mine = kind != 0 ? rank_ : ranks_;
    int first = ranks_;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (first == ranks_) return;
    agreed_ = true;
    int head[2] = {kind, static_cast<int>(std::min<size_t>(what.size(), 1 << 20))};
    MPI_Bcast(head, 2, MPI_INT, first, MPI_COMM_WORLD);
    what.resize(static_cast<size_t>(head[1]));
    MPI_Bcast(what.data(), head[1], MPI_CHAR, first, MPI_COMM_WORLD);
    if (err) std::rethrow_exception(err);
    const std::string msg = what + " (on rank " + std::to_string(first) + ")";
    if (head[0] == 1) throw Unsupported(msg);
    throw Error(msg);
  }

 private:
  int node_rank() const { return node_rank_; }
  int node_size() const { return node_size_; }

  int rank_ = 0, ranks_ = 1;
  int node_rank_ = 0, node_size_ = 1;  // this rank's place among the ranks on its node, and their number
  bool owns_mpi_ = false;
  bool agreed_ = false;
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string megabytes(int64_t bytes) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.3f MB", static_cast<double>(bytes) / 1e6);
  return buf;
}

// Which global starts a dense operand or result is split by: A's rows, B's rows (A's columns),
// or the entries of each rank's rows.
enum class Split { rows, cols, entries };

template <class I, class V>
class DistWork final : public Workload {
 public:
  DistWork(MpiSession& session, const Context& ctx, const HostCsr<I, V>& graph, const WorkloadSpec& spec,
           const DistOptions& dopt)
      : session_(session), ctx_(ctx), spec_(spec) {
    if (!dist_supports(spec.op))
      throw InvalidArgument(std::string("sparseport run --dist: runs ") + kDistOps + ", not " + op_name(spec.op));
    const bool root = session.rank() == 0;
    const bool sddmm = spec.op == SPARSEPORT_OP_SDDMM, segment = spec.op == SPARSEPORT_OP_SEGMENT_REDUCE;
    // Rank 0's ordinary workload makes the operands from the seed and verifies the gathered result;
    // on the reference backend, whose memory is the host's.
    session.collective([&] {
      if (root) inner_ = make_workload<I, V>(Context::create("reference"), graph, spec);
    });
    // The partition, on rank 0 (which alone holds the graph); the policy is read on every rank (the
    // same arguments and environment everywhere), so that a bad one fails on each.
    session.collective([&] {
      dist::PartitionPolicy policy = dopt.partition.empty()
                                         ? dist::partition_policy_from_env()
                                         : dist::partition_policy_from_name(dopt.partition, "--partition");
      if (!root) return;
      // segment_reduce moves no halo, so there is nothing for METIS to lower.
      const bool no_halo = segment && policy == dist::PartitionPolicy::automatic;
      if (no_halo) policy = dist::PartitionPolicy::rows;
      choice_ = dist::choose_partition(graph.view(), session.ranks(), policy);
      if (no_halo) choice_.reason = "segment_reduce moves no halo";
      if (choice_.used == dist::PartitionPolicy::metis) {
        permuted_ = dist::permute_symmetric(graph, choice_.perm);
        if (sddmm || segment) entry_order_ = entries_in_new_order(graph, choice_.perm);
      }
    });
    graph_ = root ? &graph : nullptr;
    distribute();
    if (dopt.rebalance) rebalance(dopt.variant);
  }

  void reset() override {
    std::fill(out_.data.begin(), out_.data.end(), std::numeric_limits<V>::quiet_NaN());
    to_context(out_, dev_out_);
    calls_.clear();
  }

  // Ends with every rank's agreement, so a timed call lasts until the slowest rank is done.
  void run(const std::string& variant) override {
    dist::CallStats st;
    const DenseView o = in_context(out_, dev_out_);
    const DenseMutView out{o.rows, o.cols, o.ld, const_cast<void*>(o.data), o.value_type};
    session_.collective([&] {
      switch (spec_.op) {
        case SPARSEPORT_OP_SPMM:
          dist::spmm(ctx_, a_, in_context(x_, dev_x_), out, SpmmOptions{spec_.reduce, 1.0, 0.0, variant}, &st);
          break;
        case SPARSEPORT_OP_SDDMM:
          dist::sddmm(ctx_, a_, in_context(x_rows_, dev_x_rows_), in_context(x_, dev_x_), out, OpOptions{variant}, &st);
          break;
        case SPARSEPORT_OP_SEGMENT_REDUCE:
          dist::segment_reduce(ctx_, a_, in_context(x_, dev_x_), out, ReduceOptions{spec_.reduce, variant}, &st);
          break;
        default:
          dist::gather_scatter(ctx_, a_, in_context(x_, dev_x_), out, ReduceOptions{spec_.reduce, variant}, &st);
      }
    });
    calls_.push_back(std::move(st));
  }

  Verdict verify() override {
    const bool root = session_.rank() == 0;
    const DenseMutView none{0, 0, 0, nullptr, value_type_of<V>()};
    session_.collective([&] {
      if (ctx_.device_memory() && !out_.data.empty())
        ctx_.copy_to_host(out_.data.data(), dev_out_.data(), out_.data.size() * sizeof(V));
    });
    session_.collective([&] {
      if (!relabelled()) {
        dist::gather_rows<V>(MPI_COMM_WORLD, out_.view(), root ? *inner_->host_output() : none, starts(out_split_));
        return;
      }
      // Gathered in the new order, then each row put back where the original order has it.
      const DenseMutView host = *inner_->host_output();
      HostDense<V> got(host.rows, host.cols);
      dist::gather_rows<V>(MPI_COMM_WORLD, out_.view(), got.mut(), starts(out_split_));
      const std::vector<int64_t>& order = order_of(out_split_);
      for (int64_t i = 0; i < got.rows; ++i)
        for (int64_t j = 0; j < got.cols; ++j)
          static_cast<V*>(host.data)[order[static_cast<size_t>(i)] * host.ld + j] = got(i, j);
    });
    Verdict v;
    session_.collective([&] {
      if (root) v = inner_->verify();
    });
    int ok = v.ok ? 1 : 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, MPI_COMM_WORLD);
    v.ok = ok != 0;
    summarise();
    return v;
  }

  std::optional<double> flops() const override { return inner_ ? inner_->flops() : std::nullopt; }
  double gathered_bytes() const override { return inner_ ? inner_->gathered_bytes() : 0.0; }
  std::optional<Decision> decision() const override {
    if (calls_.empty()) return std::nullopt;
    return calls_.back().local_decision;
  }

  void report(JsonObject& o) const override {
    // The partition chosen (rank 0's choice), both predictions for this op's F and value type, and
    // what METIS cost where it ran.
    const auto bytes = [&](const dist::HaloVolume& h) {
      return spec_.op == SPARSEPORT_OP_SEGMENT_REDUCE ? int64_t{0} : h.bytes(spec_.features, sizeof(V));
    };
    o.add("ranks", session_.ranks())
        .add("partition", std::string(dist::name(choice_.used)))
        .add("partition_reason", choice_.reason)
        .add("degree_skew", choice_.degree_skew)
        .add("halo_bytes_predicted_rows", bytes(choice_.rows_halo))
        .add("halo_bytes_predicted_metis",
             choice_.metis_ran ? std::optional<int64_t>(bytes(choice_.metis_halo)) : std::nullopt)
        .add("metis_ms", choice_.metis_ran ? std::optional<double>(choice_.metis_ms) : std::nullopt)
        .raw("rebalance", rebalance_note_.empty() ? "null" : json_string(rebalance_note_))
        .add("row_weight", row_weight_)
        .add("halo_bytes", halo_bytes_)
        .add("halo_bytes_predicted", predicted_)
        .add("comm_ms", ms_[0])
        .add("compute_ms", ms_[1])
        .add("transport", transport())
        .add("interior_ms", ms_[6])
        .add("exchange_ms", ms_[7])
        .add("wait_ms", ms_[2])
        .add("boundary_ms", ms_[8]);
    // Each rank's timeline (medians of its timed calls): what hid the halo, how long it took, the
    // part left waiting, and what had to follow it.
    std::vector<std::string> ranks;
    for (int r = 0; r < static_cast<int>(per_rank_ms_.size() / kFields); ++r) {
      const double* m = per_rank_ms_.data() + static_cast<size_t>(r) * kFields;
      JsonObject t;
      t.add("rank", r)
          .add("interior_ms", m[6])
          .add("exchange_ms", m[7])
          .add("wait_ms", m[2])
          .add("boundary_ms", m[8])
          .add("interior_rows", per_rank_rows_[3 * static_cast<size_t>(r)])
          .add("boundary_rows", per_rank_rows_[3 * static_cast<size_t>(r) + 1])
          .add("halo_in_place", per_rank_rows_[3 * static_cast<size_t>(r) + 2] != 0);
      ranks.push_back(t.str());
    }
    o.raw("timeline", json_array(ranks));
  }
  std::string report_line() const override {
    char buf[1024];
    std::snprintf(buf, sizeof buf,
                  "  distributed over %d ranks (%s), partition %s (%s): halo %s per call (predicted %s); comm "
                  "%.4f ms (waiting %.4f), "
                  "compute %.4f ms (local %.4f, remote %.4f, combine %.4f); timeline: interior %.4f, exchange "
                  "%.4f, wait %.4f, boundary %.4f ms; medians per call, slowest rank",
                  session_.ranks(), transport(), std::string(dist::name(choice_.used)).c_str(), choice_.reason.c_str(),
                  megabytes(halo_bytes_).c_str(),
                  megabytes(predicted_).c_str(), ms_[0], ms_[2], ms_[1], ms_[3], ms_[4], ms_[5], ms_[6], ms_[7],
                  ms_[2], ms_[8]);
    return buf;
  }

 private:
  // The halo's transport of the last call ("none" where nothing moved: one rank, segment_reduce).
  const char* transport() const {
    return calls_.empty() || *calls_.back().transport == '\0' ? "none" : calls_.back().transport;
  }

  // A host operand in the context's memory: itself on the host, else its copy in dev (made by
  // to_context, which copies the host values in).
  DenseView in_context(const HostDense<V>& h, const Buffer& dev) const {
    return ctx_.device_memory() ? make_dense<V>(h.rows, h.cols, h.ld, static_cast<const V*>(dev.data())) : h.view();
  }
  void to_context(const HostDense<V>& h, Buffer& dev) const {
    if (!ctx_.device_memory() || h.data.empty()) return;
    const size_t bytes = h.data.size() * sizeof(V);
    if (dev.bytes() < bytes) dev = ctx_.allocate(bytes);
    ctx_.copy_to_backend(dev.data(), h.data.data(), bytes);
  }

  // The timed calls' medians on each rank (the warm-up left out), the slowest rank's on rank 0;
  // the halo bytes of one call summed over the ranks.
  void summarise() {
    // comm, compute, then their parts: wait, local, remote, combine.
    const auto fields = [](const dist::CallStats& c) {
      return std::vector<double>{c.comm_ms(),  c.compute_ms(), c.wait_ms,     c.local_ms,   c.remote_ms,
                                 c.combine_ms, c.interior_ms,  c.exchange_ms, c.boundary_ms};
    };
    std::vector<std::vector<double>> per_field(kFields);
    for (size_t k = calls_.size() > 1 ? 1 : 0; k < calls_.size(); ++k) {
      const std::vector<double> f = fields(calls_[k]);
      for (size_t i = 0; i < kFields; ++i) per_field[i].push_back(f[i]);
    }
    double mine[kFields];
    for (size_t i = 0; i < kFields; ++i) mine[i] = median(per_field[i]);
    MPI_Reduce(mine, ms_, static_cast<int>(kFields), MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    const bool root = session_.rank() == 0;
    per_rank_ms_.assign(root ? static_cast<size_t>(session_.ranks()) * kFields : 0, 0.0);
    MPI_Gather(mine, static_cast<int>(kFields), MPI_DOUBLE, per_rank_ms_.data(), static_cast<int>(kFields), MPI_DOUBLE,
               0, MPI_COMM_WORLD);
    const int64_t rows[3] = {calls_.empty() ? 0 : calls_.back().interior_rows,
                             calls_.empty() ? 0 : calls_.back().boundary_rows,
                             calls_.empty() ? 0 : int64_t{calls_.back().halo_in_place}};
    per_rank_rows_.assign(root ? 3 * static_cast<size_t>(session_.ranks()) : 0, 0);
    MPI_Gather(rows, 3, MPI_INT64_T, per_rank_rows_.data(), 3, MPI_INT64_T, 0, MPI_COMM_WORLD);
    const int64_t sent = calls_.empty() ? 0 : calls_.back().bytes_sent;
    halo_bytes_ = 0;
    MPI_Reduce(&sent, &halo_bytes_, 1, MPI_INT64_T, MPI_SUM, 0, MPI_COMM_WORLD);
  }

  // Scatters A and the operands with choice_'s partition (rank 0 holds graph_); collective.
  void distribute() {
    const bool root = session_.rank() == 0;
    const bool sddmm = spec_.op == SPARSEPORT_OP_SDDMM, segment = spec_.op == SPARSEPORT_OP_SEGMENT_REDUCE;
    const HostCsr<I, V>& graph = root ? *graph_ : permuted_;  // others: unused
    const bool renumbered = root && choice_.used == dist::PartitionPolicy::metis;
    // Each of these fails on every rank together (sparseport::dist agrees on bad arguments);
    // collective() tells the session so.
    session_.collective([&] {
      a_ = dist::DistCsr<I, V>::scatter(MPI_COMM_WORLD, root ? (renumbered ? &permuted_ : &graph) : nullptr, 0,
                                        root ? &choice_.partition : nullptr);
    });
    // Rank r's entries are the global entries [entry_starts[r], entry_starts[r+1]).
    const int64_t mine = a_.local_nnz();
    std::vector<int64_t> counts(static_cast<size_t>(session_.ranks()));
    MPI_Allgather(&mine, 1, MPI_INT64_T, counts.data(), 1, MPI_INT64_T, MPI_COMM_WORLD);
    entry_starts_.assign(1, 0);
    for (const int64_t c : counts) entry_starts_.push_back(entry_starts_.back() + c);
    const DenseView none{0, 0, 0, nullptr, value_type_of<V>()};
    // With METIS the operands go out in the new order: vertices (B's and X's rows) by perm, entries
    // (segment_reduce's messages) by entry_order_.
    session_.collective([&] {
      const Split split = segment ? Split::entries : Split::cols;
      HostDense<V> in;
      if (renumbered) in = in_new_order(*inner_->host_input(), order_of(split));
      x_ = dist::scatter_rows<V>(MPI_COMM_WORLD, root ? (renumbered ? in.view() : *inner_->host_input()) : none,
                                 starts(split));
    });
    if (sddmm)
      session_.collective([&] {
        HostDense<V> in;
        if (renumbered) in = in_new_order(*inner_->host_row_input(), order_of(Split::rows));
        x_rows_ = dist::scatter_rows<V>(
            MPI_COMM_WORLD, root ? (renumbered ? in.view() : *inner_->host_row_input()) : none, starts(Split::rows));
      });
    out_split_ = sddmm ? Split::entries : Split::rows;
    out_ = sddmm ? HostDense<V>(a_.local_nnz(), 1) : HostDense<V>(a_.local_rows(), spec_.features);
    session_.collective([&] {
      to_context(x_, dev_x_);
      to_context(x_rows_, dev_x_rows_);
      to_context(out_, dev_out_);
    });
    session_.collective([&] {
      if (root && !segment)
        predicted_ = dist::predict_halo((renumbered ? permuted_ : graph).view(), a_.partition())
                         .bytes(spec_.features, sizeof(V));
    });
  }

  // --rebalance (DistOptions): one warm-up and kRebalanceCalls timed calls on the entry-balanced
  // rows, the ranks' median compute times fitted to entries and rows, and a second scatter where
  // the fitted weight predicts the slowest rank at least kRebalanceGain faster. The fit assumes a
  // row and an entry cost the same on every rank; where the hubs' gathers hit the cache and the
  // tail's do not, that is what the fitted weight absorbs (it is measured, not assumed).
  void rebalance(const std::string& variant) {
    // Only rank 0 knows the partition chosen: it says whether to go on, so that all ranks agree.
    int rows = session_.rank() == 0 && choice_.used == dist::PartitionPolicy::rows ? 1 : 0;
    MPI_Bcast(&rows, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (session_.ranks() < 2 || rows == 0) {
      if (session_.rank() == 0) rebalance_note_ = session_.ranks() < 2 ? "one rank" : "METIS's partition is kept";
      return;
    }
    reset();
    run(variant);  // decides each block's variant
    std::vector<double> compute;
    for (int k = 0; k < kRebalanceCalls; ++k) {
      run(variant);
      compute.push_back(calls_.back().compute_ms());
    }
    dist::RankCost mine{a_.local_nnz(), a_.local_rows(), median(compute)};
    calls_.clear();
    const bool root = session_.rank() == 0;
    std::vector<dist::RankCost> all(root ? static_cast<size_t>(session_.ranks()) : 0);
    static_assert(sizeof(dist::RankCost) == 3 * sizeof(int64_t), "RankCost: two int64 and a double");
    MPI_Gather(&mine, static_cast<int>(sizeof mine), MPI_BYTE, all.data(), static_cast<int>(sizeof mine), MPI_BYTE, 0,
               MPI_COMM_WORLD);
    int again = 0;
    if (root) {
      const double fitted = dist::fit_row_weight(all, std::numeric_limits<double>::quiet_NaN());
      if (std::isnan(fitted)) {
        // Blocks of one shape, or a fit with a row or an entry costing less than nothing (times
        // noisier than the blocks differ): nothing measured to rebalance with.
        rebalance_note_ = "no fit: the ranks' times do not separate a row's cost from an entry's; kept";
      }
      const double w = std::isnan(fitted) ? 1.0 : fitted;
      dist::Partition next = dist::partition_rows_by_cost(graph_->view(), session_.ranks(), w);
      const double now = dist::predicted_imbalance(graph_->view(), choice_.partition, all);
      const double then = dist::predicted_imbalance(graph_->view(), next, all);
      char buf[200];
      std::snprintf(buf, sizeof buf, "row weight %.3g entries fitted; slowest rank predicted %.3fx the mean, %.3fx with it",
                    w, now, then);
      if (!std::isnan(fitted)) {
        rebalance_note_ = buf;
        row_weight_ = w;
      }
      if (!std::isnan(fitted) && now >= kRebalanceGain * then) {
        choice_.partition = std::move(next);
        choice_.reason += "; rebalanced with a row weight of " + std::to_string(w);
        rebalance_note_ += ": scattered again";
        again = 1;
      } else if (!std::isnan(fitted)) {
        rebalance_note_ += ": kept";
      }
    }
    MPI_Bcast(&again, 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (again != 0) distribute();
  }

  // The predicted gain below which --rebalance keeps the partition, and the timed calls whose median
  // each rank reports to the fit: on the 2-core VM a rank's repeated calls differ by 5-20 %.
  static constexpr double kRebalanceGain = 1.05;
  static constexpr int kRebalanceCalls = 3;

  bool relabelled() const { return session_.rank() == 0 && choice_.used == dist::PartitionPolicy::metis; }

  // Rank 0 with METIS: where each row of an operand split by s comes from in the original order.
  const std::vector<int64_t>& order_of(Split s) const { return s == Split::entries ? entry_order_ : choice_.perm; }

  // d's rows in the new order: row i of the result is row order[i] of d.
  static HostDense<V> in_new_order(const DenseView& d, const std::vector<int64_t>& order) {
    HostDense<V> out(d.rows, d.cols);
    const V* src = static_cast<const V*>(d.data);
    for (int64_t i = 0; i < d.rows; ++i)
      for (int64_t j = 0; j < d.cols; ++j) out(i, j) = src[order[static_cast<size_t>(i)] * d.ld + j];
    return out;
  }

  // For each entry of permute_symmetric(graph, perm), in its order, the entry of graph it is: new
  // row i is old row perm[i], its entries stably sorted by their new column (as permute_symmetric
  // sorts them).
  static std::vector<int64_t> entries_in_new_order(const HostCsr<I, V>& graph, const std::vector<int64_t>& perm) {
    std::vector<int64_t> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inv[static_cast<size_t>(perm[i])] = static_cast<int64_t>(i);
    std::vector<int64_t> order;
    order.reserve(static_cast<size_t>(graph.nnz()));
    for (const int64_t o : perm) {
      const size_t first = order.size();
      for (I e = graph.rowptr[static_cast<size_t>(o)]; e < graph.rowptr[static_cast<size_t>(o) + 1]; ++e)
        order.push_back(e);
      std::stable_sort(order.begin() + static_cast<std::ptrdiff_t>(first), order.end(), [&](int64_t x, int64_t y) {
        return inv[static_cast<size_t>(graph.colind[static_cast<size_t>(x)])] <
               inv[static_cast<size_t>(graph.colind[static_cast<size_t>(y)])];
      });
    }
    return order;
  }

  const std::vector<int64_t>& starts(Split s) const {
    return s == Split::rows ? a_.partition().row_starts : s == Split::cols ? a_.partition().col_starts : entry_starts_;
  }

  MpiSession& session_;
  Context ctx_;
  WorkloadSpec spec_;
  std::unique_ptr<Workload> inner_;  // rank 0 only
  // Rank 0: the partition chosen; with METIS the relabelled graph and, for the ops split by
  // entries, where each of its entries comes from.
  dist::PartitionChoice choice_;
  const HostCsr<I, V>* graph_ = nullptr;  // rank 0: the caller's graph (outlives this workload)
  std::string rebalance_note_;            // rank 0: what --rebalance measured and did (empty: not asked)
  std::optional<double> row_weight_;      // rank 0: the fitted row weight
  HostCsr<I, V> permuted_;
  std::vector<int64_t> entry_order_;
  dist::DistCsr<I, V> a_;
  std::vector<int64_t> entry_starts_;
  // x_: the operand read through the pattern (B, x, Y; segment_reduce's messages, split by
  // entries); x_rows_: sddmm's X; out_: C or out, split by rows (sddmm: by entries).
  HostDense<V> x_, x_rows_, out_;
  Buffer dev_x_, dev_x_rows_, dev_out_;  // their copies in a device context's memory
  Split out_split_ = Split::rows;
  std::vector<dist::CallStats> calls_;
  int64_t predicted_ = 0, halo_bytes_ = 0;
  static constexpr size_t kFields = 9;
  // rank 0: comm, compute, wait, local, remote, combine, interior, exchange, boundary (see summarise)
  double ms_[kFields] = {};
  std::vector<double> per_rank_ms_;     // rank 0: every rank's kFields medians, rank after rank
  std::vector<int64_t> per_rank_rows_;  // rank 0: every rank's interior and boundary rows, halo_in_place
};

}  // namespace

std::unique_ptr<DistSession> start_dist_session() { return std::make_unique<MpiSession>(); }

template <class I, class V>
std::unique_ptr<Workload> make_dist_workload(DistSession& session, const Context& ctx, const HostCsr<I, V>& graph,
                                             const WorkloadSpec& spec, const DistOptions& dist) {
  return std::make_unique<DistWork<I, V>>(static_cast<MpiSession&>(session), ctx, graph, spec, dist);
}

template std::unique_ptr<Workload> make_dist_workload(DistSession&, const Context&, const HostCsr<int32_t, float>&,
                                                      const WorkloadSpec&, const DistOptions&);
template std::unique_ptr<Workload> make_dist_workload(DistSession&, const Context&, const HostCsr<int32_t, double>&,
                                                      const WorkloadSpec&, const DistOptions&);
template std::unique_ptr<Workload> make_dist_workload(DistSession&, const Context&, const HostCsr<int64_t, float>&,
                                                      const WorkloadSpec&, const DistOptions&);
template std::unique_ptr<Workload> make_dist_workload(DistSession&, const Context&, const HostCsr<int64_t, double>&,
                                                      const WorkloadSpec&, const DistOptions&);

}  // namespace sparseport::cli
