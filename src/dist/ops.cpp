// SPDX-License-Identifier: Apache-2.0
// The distributed ops: post the halo exchange, run the local block through the public op while it
// flies, wait, run the remote block on the received rows, combine. Every block and the combine
// step are calls of the public API on the caller's context (scheduler, any host backend).
#include <algorithm>
#include <chrono>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "src/dist/ops_internal.hpp"

namespace sparseport::dist {

namespace detail {

void check_dense_operand(const DenseView& d, ValueType want_type, int64_t rows, int64_t cols, const char* arg,
                         const char* rule, const std::string& w) {
  const auto shape = [](int64_t r, int64_t c) { return std::to_string(r) + "x" + std::to_string(c); };
  if (d.value_type != want_type)
    throw InvalidArgument(w + ": " + arg + " holds " + name(d.value_type) + " values but A holds " + name(want_type));
  if (d.rows != rows || d.cols != cols)
    throw DimensionMismatch(w + ": " + arg + " is " + shape(d.rows, d.cols) + " but must be " + shape(rows, cols) +
                            " (" + rule + ")");
  if (d.ld < d.cols || (d.rows > 1 && d.ld < 1))
    throw InvalidArgument(w + ": " + arg + " has ld " + std::to_string(d.ld) + " for " + std::to_string(d.cols) +
                          " columns (need ld >= cols, and ld >= 1 for more than one row)");
  if (d.data == nullptr && d.rows > 0 && d.cols > 0) throw InvalidArgument(w + ": " + arg + ".data is null");
}

void add_step(CallStats& into, const CallStats& step, bool first) {
  if (first) {
    into = step;
    return;
  }
  into.bytes_sent += step.bytes_sent;
  into.bytes_received += step.bytes_received;
  into.messages_sent += step.messages_sent;
  into.messages_received += step.messages_received;
  if (*step.transport != '\0') {
    into.halo_in_place = *into.transport == '\0' ? step.halo_in_place : into.halo_in_place && step.halo_in_place;
    into.transport = step.transport;
  }
  for (auto f : {&CallStats::pack_ms, &CallStats::post_ms, &CallStats::wait_ms, &CallStats::local_ms,
                 &CallStats::remote_ms, &CallStats::combine_ms, &CallStats::total_ms, &CallStats::interior_ms,
                 &CallStats::exchange_ms, &CallStats::boundary_ms})
    into.*f += step.*f;
  into.interior_rows = step.interior_rows;
  into.boundary_rows = step.boundary_rows;
  if (!step.local_decision.variant.empty()) into.local_decision = step.local_decision;
}

}  // namespace detail

namespace {

using detail::check_dense_operand;
using detail::Clock;
using detail::ms_since;
using detail::timed;

// One block's op: out = alpha * reduce(block, x) + beta * out (beta only where the op has one).
// dst: the block's rows as COO destinations, made by the op when it needs them (gather_scatter).
template <class I, class V>
using RunBlock = std::function<void(const HostCsr<I, V>& block, std::vector<I>& dst, const DenseView& x,
                                    const DenseMutView& out, Reduce reduce, double alpha, double beta)>;

template <class I, class V>
void check_operands(const DistCsr<I, V>& a, const DenseView& x, const DenseMutView& out, const char* x_name,
                    const char* out_name, const std::string& w) {
  const auto shape = [](int64_t r, int64_t c) { return std::to_string(r) + "x" + std::to_string(c); };
  // x is read here (packing) before any op checks it, so its shape, type and pointer are checked first.
  if (x.value_type != value_type_of<V>() || out.value_type != value_type_of<V>())
    throw InvalidArgument(w + ": " + x_name + " and " + out_name + " must hold " + name(value_type_of<V>()) +
                          " values, as A does");
  if (x.rows != a.local_cols() || x.ld < x.cols || (x.data == nullptr && x.rows > 0 && x.cols > 0))
    throw DimensionMismatch(w + ": " + x_name + " is " + shape(x.rows, x.cols) + " (ld " + std::to_string(x.ld) +
                            ") but this rank owns " + std::to_string(a.local_cols()) +
                            " of its rows (need rows == local_cols, ld >= cols, data not null)");
  if (out.rows != a.local_rows() || out.cols != x.cols)
    throw DimensionMismatch(w + ": " + out_name + " is " + shape(out.rows, out.cols) + " but must be " +
                            shape(a.local_rows(), x.cols) + " (this rank's rows x " + x_name + ".cols)");
}

// The rows split by whether they have remote entries (State::RowSplit), made once per matrix.
template <class I, class V>
const typename DistCsr<I, V>::State::RowSplit& row_split(typename DistCsr<I, V>::State& s) {
  if (s.split) return *s.split;
  typename DistCsr<I, V>::State::RowSplit sp;
  const HostCsr<I, V>& loc = s.local;
  const HostCsr<I, V>& rem = s.remote;
  const int64_t m = loc.rows;
  const bool values = !s.pattern;
  const auto start = [](HostCsr<I, V>& k, int64_t rows, int64_t cols) {
    k.rows = rows;
    k.cols = cols;
    k.rowptr.assign(1, I(0));
  };
  const auto append_row = [values](HostCsr<I, V>& k, const HostCsr<I, V>& from, int64_t i) {
    for (I e = from.rowptr[static_cast<size_t>(i)]; e < from.rowptr[static_cast<size_t>(i) + 1]; ++e) {
      k.colind.push_back(from.colind[static_cast<size_t>(e)]);
      if (values) k.values.push_back(from.values[static_cast<size_t>(e)]);
    }
    k.rowptr.push_back(static_cast<I>(k.colind.size()));
  };
  start(sp.interior, m, loc.cols);
  for (int64_t i = 0; i < m; ++i)
    if (rem.rowptr[static_cast<size_t>(i) + 1] > rem.rowptr[static_cast<size_t>(i)]) sp.boundary_rows.push_back(i);
  const int64_t nb = static_cast<int64_t>(sp.boundary_rows.size());
  start(sp.boundary_local, nb, loc.cols);
  start(sp.boundary_remote, nb, rem.cols);
  size_t t = 0;
  for (int64_t i = 0; i < m; ++i) {
    if (t < sp.boundary_rows.size() && sp.boundary_rows[t] == i) {
      sp.interior.rowptr.push_back(static_cast<I>(sp.interior.colind.size()));
      append_row(sp.boundary_local, loc, i);
      append_row(sp.boundary_remote, rem, i);
      ++t;
    } else {
      append_row(sp.interior, loc, i);
    }
  }
  sp.boundary_lo = nb > 0 ? sp.boundary_rows.front() : 0;
  sp.boundary_hi = nb > 0 ? sp.boundary_rows.back() + 1 : 0;
  s.split = std::move(sp);
  return *s.split;
}

// (hi - lo) x 2 boundary rows: (i - lo, 2t) when boundary row t (row i) has local entries,
// (i - lo, 2t + 1) for its remote ones; values 1/degree(i) for mean, else a pattern.
template <class I, class V>
const HostCsr<I, V>& combine_matrix(typename DistCsr<I, V>::State& s, bool mean, const std::string& w) {
  std::optional<HostCsr<I, V>>& slot = mean ? s.combine_mean : s.combine_pattern;
  if (slot) return *slot;
  const typename DistCsr<I, V>::State::RowSplit& sp = row_split<I, V>(s);
  const int64_t nb = static_cast<int64_t>(sp.boundary_rows.size());
  if (2 * nb > static_cast<int64_t>(std::numeric_limits<I>::max()))
    throw Unsupported(w + ": this rank's " + std::to_string(nb) + " boundary rows are too many for the combine step with " +
                      name(index_type_of<I>()) + " indices; use int64 indices");
  HostCsr<I, V> k;
  k.rows = sp.boundary_hi - sp.boundary_lo;
  k.cols = 2 * nb;
  k.rowptr.assign(static_cast<size_t>(k.rows) + 1, I(0));
  size_t t = 0;
  for (int64_t i = sp.boundary_lo; i < sp.boundary_hi; ++i) {
    if (t < sp.boundary_rows.size() && sp.boundary_rows[t] == i) {
      const int64_t dl = sp.boundary_local.rowptr[t + 1] - sp.boundary_local.rowptr[t];
      const int64_t dr = sp.boundary_remote.rowptr[t + 1] - sp.boundary_remote.rowptr[t];
      const V inv = V(1) / static_cast<V>(dl + dr);  // dr > 0: a boundary row
      if (dl > 0) k.colind.push_back(static_cast<I>(2 * t));
      k.colind.push_back(static_cast<I>(2 * t + 1));
      if (mean) k.values.resize(k.colind.size(), inv);
      ++t;
    }
    k.rowptr[static_cast<size_t>(i - sp.boundary_lo) + 1] = static_cast<I>(k.colind.size());
  }
  slot = std::move(k);
  return *slot;
}

// local_nnz x local_nnz: row e a 1 at column l when entry e (in the rows' original order) is the
// local block's l-th, at nl + r when it is the remote block's r-th. Each block kept its entries'
// relative order, so remote_entry alone gives the mapping.
template <class I, class V>
const HostCsr<I, V>& merge_matrix(typename DistCsr<I, V>::State& s) {
  if (s.merge) return *s.merge;
  const int64_t n = static_cast<int64_t>(s.remote_entry.size()), nl = s.local.nnz();
  HostCsr<I, V> k;
  k.rows = k.cols = n;
  k.rowptr.resize(static_cast<size_t>(n) + 1);
  k.colind.resize(static_cast<size_t>(n));
  int64_t l = 0, r = 0;
  for (int64_t e = 0; e < n; ++e) {
    k.rowptr[static_cast<size_t>(e)] = static_cast<I>(e);
    k.colind[static_cast<size_t>(e)] = static_cast<I>(s.remote_entry[static_cast<size_t>(e)] ? nl + r++ : l++);
  }
  k.rowptr[static_cast<size_t>(n)] = static_cast<I>(n);
  s.merge = std::move(k);
  return *s.merge;
}

// The halo exchange of one call, in two halves around the local block. post_halo starts the receives
// into the ghost buffer, packs the rows of x the plan sends (one spmm by the pack matrix, in the
// context's memory) and starts the sends; it returns the ghost rows, valid after wait_halo, which
// waits for both and records what moved. Between the two, an error must drain() the transport, so
// that the other ranks' call completes too. The first exchange after the space was bound to a
// context agrees the transport with every rank.
template <class I, class V>
DenseView post_halo(typename DistCsr<I, V>::State& s, const Context& ctx, const DenseView& x, CallStats& st,
                    const std::string& w, bool& at_source) {
  detail::Space& sp = s.space;
  auto t0 = Clock::now();
  if (!sp.transport) sp.transport = detail::choose_transport(s.comm, s.plan, ctx, w);
  detail::Transport& t = *sp.transport;
  const int64_t f = x.cols;
  const int64_t row_bytes = f * static_cast<int64_t>(sizeof(V));
  V* ghost = static_cast<V*>(sp.workspace(detail::Space::ghost, static_cast<size_t>(s.plan.recv_total() * row_bytes)));
  t.post_receives(ghost, row_bytes);
  st.post_ms += ms_since(t0);
  try {
    V* send = static_cast<V*>(t.send_buffer(row_bytes));
    if (send == nullptr)
      send = static_cast<V*>(sp.workspace(detail::Space::send, static_cast<size_t>(s.plan.send_total() * row_bytes)));
    t0 = Clock::now();
    if (s.plan.send_total() > 0) {
      sparseport::spmm(ctx, sp.place(s.pack), x, make_dense<V>(s.plan.send_total(), f, f, send),
                       detail::exact_spmm(Reduce::sum, 1.0, 0.0));
      ctx.synchronize();  // the transport reads the send buffer from here on
    }
    st.pack_ms = ms_since(t0);
    t0 = Clock::now();
    t.post_sends(send, row_bytes);
    st.post_ms += ms_since(t0);
  } catch (...) {
    t.drain();
    throw;
  }
  int64_t rows = 0;
  if (const void* at = t.ghosts_in_place(&rows)) {
    at_source = true;
    return make_dense<V>(rows, f, f, static_cast<const V*>(at));
  }
  at_source = false;
  return make_dense<V>(s.remote.cols, f, std::max<int64_t>(f, 1), static_cast<const V*>(ghost));
}

// blk with each column (a ghost) replaced by its row in the transport's in-place ghost matrix of
// `rows` rows.
template <class I, class V>
const HostCsr<I, V>& in_place(std::optional<HostCsr<I, V>>& slot, const HostCsr<I, V>& blk, const detail::Transport& t,
                              int64_t rows) {
  if (slot && slot->cols == rows) return *slot;
  const std::vector<int64_t>& row = t.ghost_rows();
  HostCsr<I, V> k = blk;
  k.cols = rows;
  for (I& c : k.colind) c = static_cast<I>(row[static_cast<size_t>(c)]);
  slot = std::move(k);
  return *slot;
}

template <class I, class V>
void wait_halo(typename DistCsr<I, V>::State& s, CallStats& st, Clock::time_point posted) {
  const auto tw = Clock::now();
  const detail::Transport::Done d = s.space.transport->wait();
  st.wait_ms = ms_since(tw);
  st.exchange_ms = ms_since(posted);
  st.bytes_sent = d.bytes_sent;
  st.bytes_received = d.bytes_received;
  st.messages_sent = d.messages_sent;
  st.messages_received = d.messages_received;
  st.transport = s.space.transport->name();
}

// The timeline's names for the compute before and after the wait, and the row counts.
template <class I, class V>
void finish_timeline(typename DistCsr<I, V>::State& s, CallStats& st) {
  st.interior_ms = st.local_ms;
  st.boundary_ms = st.remote_ms + st.combine_ms;
  if (s.split) {
    st.boundary_rows = static_cast<int64_t>(s.split->boundary_rows.size());
  } else {  // sum and sddmm need no split: count without making it (O(rows))
    st.boundary_rows = 0;
    for (int64_t i = 0; i < s.remote.rows; ++i)
      st.boundary_rows += s.remote.rowptr[static_cast<size_t>(i) + 1] > s.remote.rowptr[static_cast<size_t>(i)];
  }
  st.interior_rows = s.local.rows - st.boundary_rows;
}

// The common skeleton of spmm and gather_scatter. has_beta: the op accumulates into its output
// (spmm), so sum needs no partial buffer.
template <class I, class V>
void run_distributed(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x, const DenseMutView& out,
                     Reduce reduce, double alpha, double beta, bool has_beta, const RunBlock<I, V>& run_block,
                     CallStats* stats, const std::string& w) {
  typename DistCsr<I, V>::State& s = a.state();
  const auto started = Clock::now();
  CallStats st;
  const int64_t f = x.cols;
  if (f == 0) {  // nothing moves or is computed; every rank has the same F
    if (stats != nullptr) *stats = st;
    return;
  }

  // 1. Receives first, then pack and send.
  bool at_source = false;
  const DenseView ghosts = post_halo<I, V>(s, ctx, x, st, w, at_source);
  st.halo_in_place = at_source;
  try {
    // 2. What needs no halo while it flies; 3. wait; 4. the rest on the received rows; 5. combine.
    const bool has_local = s.local.nnz() > 0, has_remote = s.remote.nnz() > 0;
    const HostCsr<I, V>& remote = at_source ? in_place<I, V>(s.remote_in_place, s.remote, *s.space.transport, ghosts.rows) : s.remote;
    const auto wait = [&] { wait_halo<I, V>(s, st, started); };
    if (!has_remote) {
      // Every row's entries are local here: one op with the caller's reduce (its degree is the full one).
      timed(ctx, st.local_ms, [&] { run_block(s.local, s.local_dst, x, out, reduce, alpha, beta); });
      wait();
    } else if (!has_local) {
      wait();
      timed(ctx, st.remote_ms, [&] { run_block(remote, s.remote_dst, ghosts, out, reduce, alpha, beta); });
    } else if (reduce == Reduce::sum && has_beta) {
      // The whole local block (interior rows and the boundary rows' local entries) hides the halo;
      // the remote entries are added after it.
      timed(ctx, st.local_ms, [&] { run_block(s.local, s.local_dst, x, out, Reduce::sum, alpha, beta); });
      wait();
      timed(ctx, st.remote_ms,
            [&] { run_block(remote, s.remote_dst, ghosts, out, Reduce::sum, alpha, 1.0); });
    } else {
      // Interior rows straight into out with the caller's reduce (the boundary rows are empty there,
      // so they get beta * out, or 0); the boundary rows' local entries into the partial buffer, row
      // t in columns [0, F), their remote entries into [F, 2F). Seen as a (2 nb) x F matrix the
      // partials are rows 2t and 2t+1, which the combine matrix reduces into out's rows [lo, hi)
      // with beta = 1 (its interior rows there are empty: they stay as they are).
      auto& sp = const_cast<typename DistCsr<I, V>::State::RowSplit&>(row_split<I, V>(s));
      const int64_t nb = static_cast<int64_t>(sp.boundary_rows.size());
      V* p = static_cast<V*>(s.space.workspace(detail::Space::partials, static_cast<size_t>(2 * nb * f) * sizeof(V)));
      const Reduce part = reduce == Reduce::mean ? Reduce::sum : reduce;
      timed(ctx, st.local_ms, [&] {
        run_block(sp.interior, sp.interior_dst, x, out, reduce, alpha, beta);
        run_block(sp.boundary_local, sp.boundary_local_dst, x, make_dense<V>(nb, f, 2 * f, p), part, 1.0, 0.0);
      });
      wait();
      timed(ctx, st.remote_ms, [&] {
        const HostCsr<I, V>& br =
            at_source ? in_place<I, V>(sp.boundary_remote_in_place, sp.boundary_remote, *s.space.transport, ghosts.rows)
                      : sp.boundary_remote;
        run_block(br, sp.boundary_remote_dst, ghosts, make_dense<V>(nb, f, 2 * f, p + f), part, 1.0, 0.0);
      });
      timed(ctx, st.combine_ms, [&] {
        const CsrView k = s.space.place(combine_matrix<I, V>(s, reduce == Reduce::mean, w));
        const int64_t lo = sp.boundary_lo, rows = sp.boundary_hi - sp.boundary_lo;
        V* o = static_cast<V*>(out.data) + lo * out.ld;
        sparseport::spmm(ctx, k, make_dense<V>(2 * nb, f, f, static_cast<const V*>(p)),
                         make_dense<V>(rows, f, out.ld, o),
                         detail::exact_spmm(reduce == Reduce::mean ? Reduce::sum : reduce, has_beta ? alpha : 1.0, 1.0));
      });
    }
  } catch (...) {
    s.space.transport->drain();  // what was posted completes, so the other ranks' call finishes too
    throw;
  }
  st.total_ms = ms_since(started);
  finish_timeline<I, V>(s, st);
  if (stats != nullptr) *stats = std::move(st);
}

}  // namespace

namespace {

// dist::spmm after its checks; values (reduce sum only) replace the blocks' own.
template <class I, class V>
void spmm_impl(const Context& ctx, const DistCsr<I, V>& a, const DenseView& b_local, const DenseMutView& c_local,
               const SpmmOptions& opt, const detail::BlockValues* values, CallStats& st, const std::string& w) {
  typename DistCsr<I, V>::State& s = a.state();
  s.space.use(ctx);
  Decision local;
  const RunBlock<I, V> run = [&](const HostCsr<I, V>& blk, std::vector<I>&, const DenseView& x,
                                 const DenseMutView& out, Reduce r, double alpha, double beta) {
    CsrView v = s.space.place(blk);
    // With reduce sum the blocks run are the local one and the remote one (or its in-place copy,
    // which has the same entries in the same order).
    if (values != nullptr) v.values = &blk == &s.local ? values->local : values->remote;
    SpmmOptions o{r, alpha, beta, opt.variant};
    o.allow_tf32 = opt.allow_tf32;
    sparseport::spmm(ctx, v, x, out, o);
    if (local.variant.empty() && blk.nnz() > 0) local = last_decision();
  };
  run_distributed<I, V>(ctx, a, b_local, c_local, opt.reduce, opt.alpha, opt.beta, true, run, &st, w);
  st.local_decision = std::move(local);
}

}  // namespace

namespace detail {

template <class I, class V>
void spmm_sum_blocks(const Context& ctx, const DistCsr<I, V>& a, const DenseView& b_local, const DenseMutView& c_local,
                     const SpmmOptions& opt, const BlockValues* values, CallStats& st, const std::string& w) {
  if (opt.reduce != Reduce::sum)  // a broken invariant: the split blocks of the other reduces are not the blocks
    throw Error(w + ": internal error: spmm_sum_blocks with reduce " + name(opt.reduce));
  spmm_impl<I, V>(ctx, a, b_local, c_local, opt, values, st, w);
}

}  // namespace detail

template <class I, class V>
void spmm(const Context& ctx, const DistCsr<I, V>& a, const DenseView& b_local, const DenseMutView& c_local,
          const SpmmOptions& opt, CallStats* stats) {
  const std::string w = detail::where(ctx, "spmm");
  check_operands(a, b_local, c_local, "b_local", "c_local", w);
  CallStats st;
  spmm_impl<I, V>(ctx, a, b_local, c_local, opt, nullptr, st, w);
  if (stats != nullptr) *stats = std::move(st);
}

template <class I, class V>
void gather_scatter(const Context& ctx, const DistCsr<I, V>& edges, const DenseView& x_local,
                    const DenseMutView& out_local, const ReduceOptions& opt, CallStats* stats) {
  const std::string w = detail::where(ctx, "gather_scatter");
  typename DistCsr<I, V>::State& s = edges.state();
  check_operands(edges, x_local, out_local, "x_local", "out_local", w);
  s.space.use(ctx);
  Decision local;
  const RunBlock<I, V> run = [&](const HostCsr<I, V>& b, std::vector<I>& dst, const DenseView& x,
                                 const DenseMutView& out, Reduce r, double, double) {
    if (static_cast<int64_t>(dst.size()) != b.nnz()) {
      dst.resize(static_cast<size_t>(b.nnz()));
      for (int64_t i = 0; i < b.rows; ++i)
        for (I e = b.rowptr[static_cast<size_t>(i)]; e < b.rowptr[static_cast<size_t>(i) + 1]; ++e)
          dst[static_cast<size_t>(e)] = static_cast<I>(i);
    }
    const CsrView placed = s.space.place(b);
    const CooView coo = make_coo<I, V>(b.rows, b.cols, b.nnz(), s.space.place(dst),
                                       static_cast<const I*>(placed.colind), static_cast<const V*>(placed.values));
    sparseport::gather_scatter(ctx, coo, x, out, ReduceOptions{r, opt.variant});
    if (stats != nullptr && local.variant.empty() && b.nnz() > 0) local = last_decision();
  };
  run_distributed<I, V>(ctx, edges, x_local, out_local, opt.reduce, 1.0, 0.0, false, run, stats, w);
  if (stats != nullptr) stats->local_decision = std::move(local);
}

namespace detail {

template <class I, class V>
void sddmm_blocks(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x_local, const DenseView& y_local,
                  const DenseMutView& out_local, const OpOptions& opt, const BlockValues* values, CallStats& st,
                  const std::string& w) {
  typename DistCsr<I, V>::State& s = a.state();
  s.space.use(ctx);
  const auto started = Clock::now();
  st = CallStats();
  const int64_t f = y_local.cols;
  const bool exchange = f > 0;  // every rank has the same F; with none, nothing moves (the ops still write 0s)
  Decision local;
  const auto run = [&](const HostCsr<I, V>& blk, const DenseView& y, const DenseMutView& out) {
    CsrView v = s.space.place(blk);
    // The remote block or its in-place copy: the same entries in the same order.
    if (values != nullptr) v.values = &blk == &s.local ? values->local : values->remote;
    sparseport::sddmm(ctx, v, x_local, y, out, opt);
    if (&blk == &s.local || local.variant.empty()) local = last_decision();
  };
  bool at_source = false;
  const DenseView ghosts = exchange ? post_halo<I, V>(s, ctx, y_local, st, w, at_source)
                                    : make_dense<V>(s.remote.cols, 0, 1, static_cast<const V*>(nullptr));
  st.halo_in_place = at_source;
  try {
    const int64_t nl = s.local.nnz(), nr = s.remote.nnz();
    const HostCsr<I, V>& remote = at_source ? in_place<I, V>(s.remote_in_place, s.remote, *s.space.transport, ghosts.rows) : s.remote;
    const auto wait = [&] {
      if (exchange) wait_halo<I, V>(s, st, started);
    };
    if (nr == 0) {
      // The local block's entries are all of this rank's, in the original order: straight into out.
      timed(ctx, st.local_ms, [&] { run(s.local, y_local, out_local); });
      wait();
    } else if (nl == 0) {
      wait();
      timed(ctx, st.remote_ms, [&] { run(remote, ghosts, out_local); });
    } else {
      // Each block into its part of a per-entry buffer, then merged back into the original order by
      // one spmm with the merge matrix (State::merge).
      V* pl = static_cast<V*>(s.space.workspace(detail::Space::partials, static_cast<size_t>(nl + nr) * sizeof(V)));
      timed(ctx, st.local_ms, [&] { run(s.local, y_local, make_dense<V>(nl, 1, 1, pl)); });
      wait();
      timed(ctx, st.remote_ms, [&] { run(remote, ghosts, make_dense<V>(nr, 1, 1, pl + nl)); });
      timed(ctx, st.combine_ms, [&] {
        sparseport::spmm(ctx, s.space.place(merge_matrix<I, V>(s)), make_dense<V>(nl + nr, 1, 1, static_cast<const V*>(pl)),
                         out_local, detail::exact_spmm(Reduce::sum, 1.0, 0.0));
      });
    }
  } catch (...) {
    if (s.space.transport) s.space.transport->drain();  // what was posted completes, so the other ranks' call finishes too
    throw;
  }
  st.total_ms = ms_since(started);
  // Each entry needs only its own row of X and column's row of Y: the local entries of every row
  // hide the halo, the remote ones follow it.
  finish_timeline<I, V>(s, st);
  st.local_decision = std::move(local);
}

}  // namespace detail

template <class I, class V>
void sddmm(const Context& ctx, const DistCsr<I, V>& a, const DenseView& x_local, const DenseView& y_local,
           const DenseMutView& out_local, const OpOptions& opt, CallStats* stats) {
  const std::string w = detail::where(ctx, "sddmm");
  // y_local is read here (packing) before any op checks it; all three are checked before anything is posted.
  const ValueType vt = value_type_of<V>();
  check_dense_operand(y_local, vt, a.local_cols(), y_local.cols, "y_local", "this rank's rows of Y: local_cols x F", w);
  check_dense_operand(x_local, vt, a.local_rows(), y_local.cols, "x_local",
                      "this rank's rows of X: local_rows x F, F = y_local.cols", w);
  check_dense_operand(out_local, vt, a.local_nnz(), 1, "out_local", "one value per entry of this rank's rows", w);
  CallStats st;
  detail::sddmm_blocks<I, V>(ctx, a, x_local, y_local, out_local, opt, nullptr, st, w);
  if (stats != nullptr) *stats = std::move(st);
}

template <class I, class V>
void segment_reduce(const Context& ctx, const DistCsr<I, V>& segments, const DenseView& src_local,
                    const DenseMutView& out_local, const ReduceOptions& opt, CallStats* stats) {
  const std::string w = detail::where(ctx, "segment_reduce");
  typename DistCsr<I, V>::State& s = segments.state();
  const ValueType vt = value_type_of<V>();
  check_dense_operand(src_local, vt, segments.local_nnz(), src_local.cols, "src_local",
                      "one message per entry of this rank's rows: local_nnz x F", w);
  check_dense_operand(out_local, vt, segments.local_rows(), src_local.cols, "out_local",
                      "this rank's rows x src_local.cols", w);
  const auto started = Clock::now();
  CallStats st;
  const size_t n = static_cast<size_t>(segments.local_nnz());
  if (s.entry_row.size() != n) {
    // Row i's entries are rowptr_local[i] + rowptr_remote[i] onwards in the original order.
    s.entry_row.resize(n);
    for (int64_t i = 0; i < s.local.rows; ++i) {
      const size_t i0 = static_cast<size_t>(i);
      const size_t e0 = static_cast<size_t>(s.local.rowptr[i0]) + static_cast<size_t>(s.remote.rowptr[i0]);
      const size_t e1 = static_cast<size_t>(s.local.rowptr[i0 + 1]) + static_cast<size_t>(s.remote.rowptr[i0 + 1]);
      std::fill(s.entry_row.begin() + static_cast<std::ptrdiff_t>(e0),
                s.entry_row.begin() + static_cast<std::ptrdiff_t>(e1), static_cast<I>(i));
    }
  }
  // Not collective, so it must not rebind the matrix's space on this rank alone (the next exchange
  // would then agree a transport that the other ranks do not): a context of another backend than
  // the space's gets a space of its own for this call.
  detail::Space own;
  detail::Space& sp = !s.space.bound_to(ctx) && s.space.transport ? own : s.space;
  sp.use(ctx);
  timed(ctx, st.local_ms, [&] {
    sparseport::segment_reduce(ctx, make_index<I>(static_cast<int64_t>(n), sp.place(s.entry_row)), src_local,
                               out_local, opt);
    if (stats != nullptr) st.local_decision = last_decision();
  });
  st.total_ms = ms_since(started);
  if (stats != nullptr) *stats = std::move(st);
}

bool has_nccl() {
#ifdef SPARSEPORT_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

#define SPARSEPORT_DIST_OPS(I, V)                                                                                 \
  template void spmm<I, V>(const Context&, const DistCsr<I, V>&, const DenseView&, const DenseMutView&,           \
                           const SpmmOptions&, CallStats*);                                                       \
  template void gather_scatter<I, V>(const Context&, const DistCsr<I, V>&, const DenseView&, const DenseMutView&, \
                                     const ReduceOptions&, CallStats*);                                           \
  template void sddmm<I, V>(const Context&, const DistCsr<I, V>&, const DenseView&, const DenseView&,             \
                            const DenseMutView&, const OpOptions&, CallStats*);                                   \
  template void segment_reduce<I, V>(const Context&, const DistCsr<I, V>&, const DenseView&, const DenseMutView&, \
                                     const ReduceOptions&, CallStats*);                                           \
  template void detail::spmm_sum_blocks<I, V>(const Context&, const DistCsr<I, V>&, const DenseView&,             \
                                              const DenseMutView&, const SpmmOptions&, const detail::BlockValues*, \
                                              CallStats&, const std::string&);                                    \
  template void detail::sddmm_blocks<I, V>(const Context&, const DistCsr<I, V>&, const DenseView&, const DenseView&, \
                                           const DenseMutView&, const OpOptions&, const detail::BlockValues*,      \
                                           CallStats&, const std::string&);
SPARSEPORT_DIST_OPS(int32_t, float)
SPARSEPORT_DIST_OPS(int32_t, double)
SPARSEPORT_DIST_OPS(int64_t, float)
SPARSEPORT_DIST_OPS(int64_t, double)
#undef SPARSEPORT_DIST_OPS

}  // namespace sparseport::dist
