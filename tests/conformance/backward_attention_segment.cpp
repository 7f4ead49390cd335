// SPDX-License-Identifier: Apache-2.0
// csr_attention_backward and the segment_reduce / scatter_reduce / gather_scatter arg and backward
// functions (backward.hpp) on every available backend, float and double, int32 and int64 indices,
// against gradients written out here as loops in double (and, for the attention, finite
// differences of the forward). Inputs: random graphs, empty rows, a mega-row, rows of one entry,
// equal scores and messages (ties), NaN and infinite scores, NaN messages, segments without
// messages, no entries at all; with and without a kept Transpose / SegmentCsr. The attention's
// softmax slot (csr_softmax, ABI 1.6) on its own, and the host pass that stands in for it on a
// plugin without it. Then the errors: every wrong shape names the function, the argument and the
// numbers.
#include <cmath>
#include <cstring>
#include <optional>

#include "common/attention_oracle.hpp"
#include "common/conformance.hpp"
#include "sparseport/backward.hpp"

namespace sparseport::testing {
namespace {

// Every available backend, the reference included.
std::vector<std::shared_ptr<Context>> backends() {
  std::vector<std::shared_ptr<Context>> out;
  for (const PluginInfo& p : plugins())
    if (p.status == PluginStatus::available) out.push_back(context_for(p.name));
  return out;
}

// An error's message, or "no exception".
template <class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no exception";
}

HostDense<double> column_of(const std::vector<double>& v) {
  HostDense<double> d(static_cast<int64_t>(v.size()), 1);
  d.data = v;
  return d;
}

// ---- csr_attention_backward ---------------------------------------------------------------------

enum class Graph { random, empty_rows, no_nnz, mega_row, power_law, single_entry };
enum class Scores {
  random,
  ties,  // Q = 0: every score of a row equal, the softmax uniform
  nan,   // one row of K holds a NaN: every row that uses it is NaN in the forward
  inf,   // rows of +inf / -inf scores (NaN in the forward) and a key of -inf score (weight 0)
};
const char* name(Graph g) {
  switch (g) {
    case Graph::random: return "random";
    case Graph::empty_rows: return "empty_rows";
    case Graph::no_nnz: return "no_nnz";
    case Graph::mega_row: return "mega_row";
    case Graph::power_law: return "power_law";
    case Graph::single_entry: return "single_entry";
  }
  return "?";
}
const char* name(Scores s) {
  switch (s) {
    case Scores::random: return "random";
    case Scores::ties: return "ties";
    case Scores::nan: return "nan";
    case Scores::inf: return "inf";
  }
  return "?";
}

struct AttentionCase {
  Graph graph;
  Scores scores;
  Types types;
};
std::string name(const AttentionCase& c) {
  return std::string(name(c.graph)) + "_" + name(c.scores) + "_" + name(c.types);
}

template <class I, class V>
HostCsr<I, V> make_graph(Graph g, std::mt19937_64& rng) {
  MatrixSpec spec;
  switch (g) {
    case Graph::random: spec.shape = Shape::random; break;
    case Graph::empty_rows: spec.shape = Shape::empty_rows; break;
    case Graph::no_nnz: spec.shape = Shape::no_nnz; break;
    case Graph::mega_row:
      spec.shape = Shape::mega_row;
      spec.duplicates = spec.unsorted = true;  // repeated keys count separately
      break;
    case Graph::power_law: spec.shape = Shape::power_law; break;
    case Graph::single_entry: {
      // P = 1 on every entry, so dS = dP - dO . O = 0 up to rounding: the subtraction is all there is.
      HostCsr<I, V> a;
      a.rows = 120;
      a.cols = 90;
      std::uniform_int_distribution<int64_t> col(0, a.cols - 1);
      for (int64_t i = 0; i < a.rows; ++i) {
        a.colind.push_back(static_cast<I>(col(rng)));
        a.values.push_back(V(1));
        a.rowptr.push_back(static_cast<I>(i + 1));
      }
      return a;
    }
  }
  return make_matrix<I, V>(spec, rng);
}

// Q and K for the score kind (values in (-1, 1) otherwise).
template <class V>
void shape_scores(Scores s, HostDense<V>& q, HostDense<V>& k) {
  const V inf = std::numeric_limits<V>::infinity();
  switch (s) {
    case Scores::random: return;
    case Scores::ties:
      for (int64_t i = 0; i < q.rows; ++i)
        for (int64_t f = 0; f < q.cols; ++f) q(i, f) = V(0);
      return;
    case Scores::nan:
      if (k.rows > 0 && k.cols > 0) k(k.rows / 2, k.cols - 1) = std::numeric_limits<V>::quiet_NaN();
      return;
    case Scores::inf:
      // Column 0 positive everywhere, so an infinity there sets the sign of the whole score.
      for (int64_t i = 0; i < q.rows; ++i) q(i, 0) = V(0.5) + std::fabs(q(i, 0));
      for (int64_t j = 0; j < k.rows; ++j) k(j, 0) = V(0.5) + std::fabs(k(j, 0));
      if (q.rows > 3) q(1, 0) = -inf, q(3, 0) = inf;  // rows of -inf and of +inf scores
      if (k.rows > 0) k(k.rows / 3, 0) = -inf;        // one key of score -inf: weight 0 in its rows
      return;
  }
}

template <class V>
HostDense<V> rounded(const HostDense<double>& d, int64_t ld) {
  HostDense<V> h(d.rows, d.cols, ld, kPadding<V>);
  for (int64_t i = 0; i < d.rows; ++i)
    for (int64_t j = 0; j < d.cols; ++j) h(i, j) = static_cast<V>(d(i, j));
  return h;
}

template <class I, class V>
void check_attention_backward(Graph graph, Scores scores, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCsr<I, V> a = make_graph<I, V>(graph, rng);
  struct Width {
    int64_t f, fv;
    double scale;
  };
  for (const Width wd : {Width{5, 3, 0.0}, Width{17, 17, 0.7}}) {
    const int64_t F = wd.f, Fv = wd.fv;
    HostDense<V> q = random_dense<V>(a.rows, F, F + 1, rng), k = random_dense<V>(a.cols, F, F, rng);
    shape_scores(scores, q, k);
    const HostDense<V> v = random_dense<V>(a.cols, Fv, Fv + 2, rng), dout = random_dense<V>(a.rows, Fv, Fv, rng);
    const double scale = wd.scale != 0.0 ? wd.scale : 1.0 / std::sqrt(static_cast<double>(F));
    const AttentionOracle o = attention_oracle(a, q, k, v, dout, scale);
    const HostDense<V> out = rounded<V>(o.out, Fv + 1);
    // The float scores carry rounding of about F eps, and every gradient sums over a row and a column.
    const auto terms = [&](int64_t) { return a.nnz() + F + Fv + 16; };
    for (const auto& ctx : backends()) {
      for (const bool with_t : {false, true}) {
        SCOPED_TRACE(std::string("backend ") + ctx->backend() + ", F " + std::to_string(F) + ", Fv " +
                     std::to_string(Fv) + ", scale " + std::to_string(wd.scale) +
                     (with_t ? ", with a Transpose" : ", no Transpose"));
        Stage st(*ctx);
        const CsrView av = st.csr(a);
        std::optional<Transpose> t;
        if (with_t) t.emplace(*ctx, av);
        const DenseMutView dq = st.dense_mut(nan_dense<V>(a.rows, F, F + 2)),
                           dk = st.dense_mut(nan_dense<V>(a.cols, F, F)),
                           dv = st.dense_mut(nan_dense<V>(a.cols, Fv, Fv + 1));
        AttentionGrads grads;
        grads.dq = dq;
        grads.dk = dk;
        grads.dv = dv;
        // Without a Transpose, ask for two of the three: the third (null data) is not computed.
        if (!with_t) grads.dq = {};
        csr_attention_backward(*ctx, av, st.dense(q), st.dense(k), st.dense(v), st.dense(out), st.dense(dout), grads,
                               wd.scale, with_t ? &*t : nullptr);
        ctx->synchronize();
        if (with_t) {
          const HostDense<V> got = st.fetch<V>(dq);
          expect_close(got, o.dq, o.dq_abs, terms, "dQ");
          expect_padding_kept(got, "dQ");
        }
        const HostDense<V> got_k = st.fetch<V>(dk), got_v = st.fetch<V>(dv);
        expect_close(got_k, o.dk, o.dk_abs, terms, "dK");
        expect_close(got_v, o.dv, o.dv_abs, terms, "dV");
        expect_padding_kept(got_v, "dV");
      }
    }
  }
}

std::vector<AttentionCase> attention_cases() {
  const std::pair<Graph, Scores> kinds[] = {
      {Graph::random, Scores::random},     {Graph::empty_rows, Scores::random}, {Graph::no_nnz, Scores::random},
      {Graph::mega_row, Scores::random},   {Graph::power_law, Scores::random},  {Graph::single_entry, Scores::random},
      {Graph::random, Scores::ties},       {Graph::mega_row, Scores::ties},     {Graph::empty_rows, Scores::nan},
      {Graph::random, Scores::inf},
  };
  std::vector<AttentionCase> out;
  for (const auto& [g, s] : kinds)
    for (const Types& t : kAllTypes) out.push_back({g, s, t});
  return out;
}

class AttentionBackwardConformance : public ::testing::TestWithParam<AttentionCase> {};

TEST_P(AttentionBackwardConformance, MatchesLoops) {
  const AttentionCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("csr_attention_backward/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_attention_backward<I, V>(c.graph, c.scores, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, AttentionBackwardConformance, ::testing::ValuesIn(attention_cases()), CaseName{});

// The formulas themselves: central differences of L = sum(G o csr_attention(A, Q, K, V)) in double
// on the reference against the backward's dQ, dK, dV, on a small graph with an empty row and a
// repeated key.
TEST(AttentionBackwardConformance, MatchesFiniteDifferences) {
  std::mt19937_64 rng(case_seed("csr_attention_backward/finite_differences"));
  HostCsr<int32_t, double> a;
  a.rows = 5;
  a.cols = 4;
  a.rowptr = {0, 3, 3, 5, 9, 10};
  a.colind = {0, 2, 3, 1, 1, 0, 1, 2, 3, 2};
  const int64_t F = 3, Fv = 2;
  const double scale = 0.8;
  HostDense<double> q = random_dense<double>(a.rows, F, F, rng), k = random_dense<double>(a.cols, F, F, rng),
                    v = random_dense<double>(a.cols, Fv, Fv, rng);
  const HostDense<double> g = random_dense<double>(a.rows, Fv, Fv, rng);
  const Context& ctx = oracle();
  AttentionOptions opt;
  opt.scale = scale;
  const auto loss = [&] {
    HostDense<double> out(a.rows, Fv);
    csr_attention(ctx, a.view(), q.view(), k.view(), v.view(), out.mut(), opt);
    double l = 0.0;
    for (int64_t i = 0; i < a.rows; ++i)
      for (int64_t c = 0; c < Fv; ++c) l += g(i, c) * out(i, c);
    return l;
  };
  HostDense<double> out(a.rows, Fv), dq(a.rows, F), dk(a.cols, F), dv(a.cols, Fv);
  csr_attention(ctx, a.view(), q.view(), k.view(), v.view(), out.mut(), opt);
  AttentionGrads grads;
  grads.dq = dq.mut();
  grads.dk = dk.mut();
  grads.dv = dv.mut();
  csr_attention_backward(ctx, a.view(), q.view(), k.view(), v.view(), out.view(), g.view(), grads, scale);
  const double h = 1e-6;
  const auto check = [&](HostDense<double>& x, const HostDense<double>& grad, const char* what) {
    for (int64_t i = 0; i < x.rows; ++i) {
      for (int64_t j = 0; j < x.cols; ++j) {
        const double keep = x(i, j);
        x(i, j) = keep + h;
        const double up = loss();
        x(i, j) = keep - h;
        const double down = loss();
        x(i, j) = keep;
        EXPECT_NEAR(grad(i, j), (up - down) / (2 * h), 1e-7) << what << "[" << i << "," << j << "]";
      }
    }
  };
  check(q, dq, "dQ");
  check(k, dk, "dK");
  check(v, dv, "dV");
  for (int64_t f = 0; f < F; ++f) EXPECT_EQ(dq(1, f), 0.0) << "row 1 has no entries";
}

// ---- the csr_softmax slot (ABI 1.6): P where the scores live --------------------------------------

// Every plugin compiled into this library was built against this plugin_abi.h, so each offers the
// slot, and csr_attention_backward never runs its host pass on them.
TEST(AttentionBackwardConformance, EveryCompiledPluginHasTheSoftmaxSlot) {
  static_assert(SPARSEPORT_ABI_VERSION_MINOR >= 6, "the csr_softmax slot came with ABI 1.6");
  int tables = 0;
  for (const PluginInfo& p : plugins()) {
    if (p.table == nullptr) continue;  // not compiled in
    ++tables;
    SCOPED_TRACE("plugin " + p.name + " (" + name(p.status) + ")");
    EXPECT_EQ(p.table->abi_version, static_cast<uint32_t>(SPARSEPORT_ABI_VERSION));
    EXPECT_EQ(p.table->table_size, static_cast<uint32_t>(sizeof(sparseport_plugin)));
    EXPECT_NE(p.table->csr_softmax, nullptr);
  }
  EXPECT_GE(tables, 1);
}

// The slot called directly on the rows a softmax can meet (scores before scaling), against the rule
// of plugin_abi.h in double: s = scale * score in the value type, shifted by the row's maximum;
// every weight of a row with a NaN, with a +inf or of all -inf NaN, a -inf among finite ones 0.
template <class I, class V>
void check_softmax_slot(uint64_t seed) {
  std::mt19937_64 rng(seed);
  const V inf = std::numeric_limits<V>::infinity(), nan = std::numeric_limits<V>::quiet_NaN();
  const auto random_row = [&](int n) {
    std::uniform_real_distribution<double> u(-3.0, 3.0);
    std::vector<V> r;
    for (int t = 0; t < n; ++t) r.push_back(static_cast<V>(u(rng)));
    return r;
  };
  const std::vector<std::vector<V>> rows = {
      {},                                             // an empty row: nothing to do
      {V(0.3)},                                       // one entry: weight 1
      random_row(7),                                  //
      {V(1.25), V(1.25), V(1.25), V(1.25), V(1.25)},  // ties: uniform
      {V(0.1), nan, V(0.2)},                          // a NaN: the row NaN
      {nan, V(0.1), V(0.2)},                          // a NaN first: the row NaN
      {-inf, -inf},                                   // all -inf: the row NaN
      {V(0.5), inf, V(0.1)},                          // a +inf: the row NaN
      {-inf, V(0.3), V(0.4)},                         // -inf first among finite ones: weight 0
      {V(0.3), -inf, V(0.4)},                         // -inf among finite ones: weight 0
      {V(200), V(150), V(180)},                       // unshifted, exp overflows in float
      {},                                             //
      random_row(3000),                               // longer than a row of cuda's warp-per-row kernel
      random_row(40),                                 //
      {},                                             // an empty last row
  };
  HostCsr<I, V> a;  // a pattern: the slot reads only rowptr
  a.rows = static_cast<int64_t>(rows.size());
  a.cols = 5;
  std::vector<V> scores;
  std::vector<int64_t> degree;
  for (const std::vector<V>& r : rows) {
    for (const V x : r) {
      scores.push_back(x);
      degree.push_back(static_cast<int64_t>(r.size()));
      a.colind.push_back(static_cast<I>(a.colind.size() % static_cast<size_t>(a.cols)));
    }
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  const double scale = 0.7;
  const int64_t E = a.nnz();
  HostDense<double> want(E, 1), bound(E, 1, 1, 1.0);  // weights are in [0, 1]
  const V sc = static_cast<V>(scale);
  for (size_t i = 0, e0 = 0; i < rows.size(); e0 += rows[i].size(), ++i) {
    const size_t deg = rows[i].size();
    if (deg == 0) continue;
    std::vector<double> x(deg);
    for (size_t t = 0; t < deg; ++t) x[t] = static_cast<double>(static_cast<V>(sc * rows[i][t]));
    double top = x[0], z = 0.0;
    for (const double s : x) top = s > top ? s : top;
    for (double& s : x) z += s = std::exp(s - top);
    for (size_t t = 0; t < deg; ++t) want(static_cast<int64_t>(e0 + t), 0) = x[t] / z;
  }
  for (const auto& ctx : backends()) {
    SCOPED_TRACE("backend " + ctx->backend());
    const sparseport_plugin* t = ctx->plugin().table;
    ASSERT_NE(t->csr_softmax, nullptr);
    Stage st(*ctx);
    HostDense<V> h(E, 1);
    h.data = scores;
    const DenseMutView p = st.dense_mut(h);
    const CsrView av = st.csr(a);
    const sparseport_csr_softmax_args args{{av.rows, av.cols, av.nnz, av.rowptr, av.colind, nullptr,
                                            static_cast<int32_t>(av.index_type), static_cast<int32_t>(av.value_type)},
                                           p.data,
                                           scale};
    const sparseport_exec x = ctx->exec();
    sparseport_status status{};
    ASSERT_EQ(t->csr_softmax(&x, &args, &status), SPARSEPORT_OK) << status.message;
    ctx->synchronize();
    expect_close(st.fetch<V>(p), want, bound, [&](int64_t e) { return degree[static_cast<size_t>(e)] + 16; }, "P");
  }
}

TEST(AttentionBackwardConformance, SoftmaxSlotOnEveryBackend) {
  for (const Types& types : kAllTypes) {
    SPARSEPORT_CONFORMANCE_SEED("csr_softmax/" + name(types));
    with_types(types, [&]<class I, class V>() { check_softmax_slot<I, V>(seed); });
  }
}

// A field of a plugin's table as the library holds it (its own copy, widened to this build's size:
// not const memory), changed for one scope and put back after: how a plugin built against ABI 1.5,
// or one without the slot, looks to the front end.
class TableEdit {
 public:
  explicit TableEdit(const Context& ctx) : t_(const_cast<sparseport_plugin*>(ctx.plugin().table)), saved_(*t_) {}
  ~TableEdit() { *t_ = saved_; }
  TableEdit(const TableEdit&) = delete;
  TableEdit& operator=(const TableEdit&) = delete;
  sparseport_plugin* operator->() const { return t_; }

 private:
  sparseport_plugin* t_;
  sparseport_plugin saved_;
};

// Stands in for a plugin's slot and counts its calls.
int softmax_calls = 0;
int (*softmax_slot)(const sparseport_exec*, const sparseport_csr_softmax_args*, sparseport_status*) = nullptr;
int counting_softmax(const sparseport_exec* x, const sparseport_csr_softmax_args* a, sparseport_status* st) {
  ++softmax_calls;
  return softmax_slot(x, a, st);
}

enum class SlotMode { slot, abi_1_5, no_slot };
const char* name(SlotMode m) {
  switch (m) {
    case SlotMode::slot: return "the slot";
    case SlotMode::abi_1_5: return "a table that says ABI 1.5 (the slot must not be asked)";
    case SlotMode::no_slot: return "a null slot (the host pass)";
  }
  return "?";
}

// csr_attention_backward calls the slot once per call where the table has it and says 1.6, and
// otherwise falls back to its host pass, whose results match: against the loops on every backend,
// and bit for bit on the reference (whose slot is that pass).
template <class I, class V>
void check_softmax_fallback(uint64_t seed) {
  // A small fixed pattern (80 x 50, degrees 0 to 12, a quarter of the rows empty, repeated keys),
  // so the scheduler's decisions for it come from its cache after the first run; Q, K, V from the seed.
  HostCsr<I, V> a;
  a.rows = 80;
  a.cols = 50;
  std::mt19937_64 fixed(2026);
  std::uniform_int_distribution<int> degree(-4, 12), col(0, static_cast<int>(a.cols) - 1);
  for (int64_t i = 0; i < a.rows; ++i) {
    for (int d = degree(fixed); d > 0; --d) a.colind.push_back(static_cast<I>(col(fixed)));
    a.rowptr.push_back(static_cast<I>(a.colind.size()));
  }
  std::mt19937_64 rng(seed);
  const int64_t F = 6, Fv = 5;
  const double scale = 0.6;
  HostDense<V> q = random_dense<V>(a.rows, F, F, rng), k = random_dense<V>(a.cols, F, F, rng);
  shape_scores(Scores::inf, q, k);  // NaN rows and a -inf key: the host pass must agree there too
  const HostDense<V> v = random_dense<V>(a.cols, Fv, Fv, rng), dout = random_dense<V>(a.rows, Fv, Fv, rng);
  const AttentionOracle o = attention_oracle(a, q, k, v, dout, scale);
  const HostDense<V> out = rounded<V>(o.out, Fv);
  const auto terms = [&](int64_t) { return a.nnz() + F + Fv + 16; };
  for (const auto& ctx : backends()) {
    std::vector<std::vector<V>> first;  // dQ, dK, dV with the slot
    for (const SlotMode mode : {SlotMode::slot, SlotMode::abi_1_5, SlotMode::no_slot}) {
      SCOPED_TRACE(std::string("backend ") + ctx->backend() + ", " + name(mode));
      TableEdit table(*ctx);
      ASSERT_NE(table->csr_softmax, nullptr);
      softmax_slot = table->csr_softmax;
      softmax_calls = 0;
      table->csr_softmax = mode == SlotMode::no_slot ? nullptr : &counting_softmax;
      if (mode == SlotMode::abi_1_5) table->abi_version = (1u << 16) | 5u;
      Stage st(*ctx);
      const CsrView av = st.csr(a);
      AttentionGrads grads;
      grads.dq = st.dense_mut(nan_dense<V>(a.rows, F, F));
      grads.dk = st.dense_mut(nan_dense<V>(a.cols, F, F));
      grads.dv = st.dense_mut(nan_dense<V>(a.cols, Fv, Fv));
      csr_attention_backward(*ctx, av, st.dense(q), st.dense(k), st.dense(v), st.dense(out), st.dense(dout), grads,
                             scale);
      ctx->synchronize();
      EXPECT_EQ(softmax_calls, mode == SlotMode::slot ? 1 : 0);
      const HostDense<V> dq = st.fetch<V>(grads.dq), dk = st.fetch<V>(grads.dk), dv = st.fetch<V>(grads.dv);
      expect_close(dq, o.dq, o.dq_abs, terms, "dQ");
      expect_close(dk, o.dk, o.dk_abs, terms, "dK");
      expect_close(dv, o.dv, o.dv_abs, terms, "dV");
      if (mode == SlotMode::slot) {
        first = {dq.data, dk.data, dv.data};
      } else if (ctx->plugin().name == "reference") {
        const std::vector<V>* got[] = {&dq.data, &dk.data, &dv.data};
        for (size_t g = 0; g < 3; ++g)
          EXPECT_EQ(std::memcmp(got[g]->data(), first[g].data(), first[g].size() * sizeof(V)), 0)
              << "gradient " << g << " (dQ, dK, dV) differs in its bits from the slot's";
      }
    }
  }
}

TEST(AttentionBackwardConformance, SoftmaxSlotUsedWhereTheTableHasIt) {
  // Both index and value types, in two runs: each new type pair costs the scheduler a first probe.
  for (const Types& types : {Types{IndexType::i32, ValueType::f32}, Types{IndexType::i64, ValueType::f64}}) {
    SPARSEPORT_CONFORMANCE_SEED("csr_softmax_fallback/" + name(types));
    with_types(types, [&]<class I, class V>() { check_softmax_fallback<I, V>(seed); });
  }
}

// ---- segment_reduce / scatter_reduce ------------------------------------------------------------

enum class Segments {
  random,        // 1500 messages over 300 segments, some empty
  none,          // no messages: every segment empty, arg -1
  mega,          // 2000 of 2300 messages in one segment
  singletons,    // one message per segment
  mostly_empty,  // 300 messages over 2000 segments, the first and the last empty
  ties,          // messages from {-2, ..., 2}: many equal, the lowest e must win
  nan,           // NaN messages here and there: the first NaN wins
};
const char* name(Segments s) {
  switch (s) {
    case Segments::random: return "random";
    case Segments::none: return "none";
    case Segments::mega: return "mega";
    case Segments::singletons: return "singletons";
    case Segments::mostly_empty: return "mostly_empty";
    case Segments::ties: return "ties";
    case Segments::nan: return "nan";
  }
  return "?";
}

struct SegmentCase {
  Segments segments;
  Types types;
};
std::string name(const SegmentCase& c) { return std::string(name(c.segments)) + "_" + name(c.types); }

// A sorted index and the number of segments.
std::vector<int64_t> sorted_index(Segments s, int64_t& n, std::mt19937_64& rng) {
  std::vector<int64_t> idx;
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  switch (s) {
    case Segments::random:
    case Segments::ties:
    case Segments::nan:
      n = 300;
      for (int e = 0; e < 1500; ++e) idx.push_back(uniform(0, n - 1));
      break;
    case Segments::none:
      n = 20;
      break;
    case Segments::mega:
      n = 60;
      idx.assign(2000, 17);
      for (int e = 0; e < 300; ++e) idx.push_back(uniform(0, n - 1));
      break;
    case Segments::singletons:
      n = 200;
      for (int64_t i = 0; i < n; ++i) idx.push_back(i);
      break;
    case Segments::mostly_empty:
      n = 2000;
      for (int e = 0; e < 300; ++e) idx.push_back(uniform(1, n - 2));
      break;
  }
  std::sort(idx.begin(), idx.end());
  return idx;
}

template <class V>
HostDense<V> messages(Segments s, int64_t rows, int64_t cols, int64_t ld, std::mt19937_64& rng) {
  HostDense<V> d = random_dense<V>(rows, cols, ld, rng);
  std::uniform_int_distribution<int> small(-2, 2);
  for (int64_t e = 0; e < rows; ++e) {
    if (s == Segments::ties)
      for (int64_t f = 0; f < cols; ++f) d(e, f) = static_cast<V>(small(rng));
    if (s == Segments::nan && e % 7 == 3) d(e, e % cols) = std::numeric_limits<V>::quiet_NaN();
  }
  return d;
}

// The winner of each (segment, f) by spmm_arg's rule over the messages of the segment in
// increasing e: the first NaN, else the first strictly greater (max) or smaller (min); -1 for an
// empty segment. msg(e, f) is the message in the value type, as the kernels compare it.
template <class Msg>
std::vector<int64_t> winners(const std::vector<int64_t>& owner, int64_t n, int64_t F, Reduce r, Msg&& msg) {
  std::vector<int64_t> win(static_cast<size_t>(n * F), -1);
  for (int64_t e = 0; e < static_cast<int64_t>(owner.size()); ++e) {
    for (int64_t f = 0; f < F; ++f) {
      int64_t& w = win[static_cast<size_t>(owner[static_cast<size_t>(e)] * F + f)];
      if (w < 0) {
        w = e;
        continue;
      }
      const auto cur = msg(w, f), m = msg(e, f);
      if (std::isnan(cur)) continue;
      if (std::isnan(m) || (r == Reduce::max ? m > cur : m < cur)) w = e;
    }
  }
  return win;
}

template <class I>
ArgMutView arg_mut(I* data, int64_t rows, int64_t cols, int64_t ld) {
  return {rows, cols, ld, data, index_type_of<I>()};
}

// The arg and out of *_arg against the winners: arg exactly (as positions via pos), out bit for bit.
template <class I, class V, class Msg>
void expect_winners(const Stage& st, const I* arg_dev, int64_t n, int64_t F, int64_t ld_arg, const DenseMutView& out,
                    const std::vector<int64_t>& win, const std::vector<int64_t>& pos, Msg&& msg) {
  const std::vector<I> arg = st.get(arg_dev, static_cast<size_t>(n * ld_arg));
  const HostDense<V> got = st.fetch<V>(out);
  int64_t bad = 0;
  for (int64_t s = 0; s < n; ++s) {
    for (int64_t f = 0; f < F; ++f) {
      const int64_t w = win[static_cast<size_t>(s * F + f)];
      const int64_t want = w < 0 ? -1 : pos[static_cast<size_t>(w)];
      const V want_out = w < 0 ? V(0) : msg(w, f), g = got(s, f);
      const bool ok = static_cast<int64_t>(arg[static_cast<size_t>(s * ld_arg + f)]) == want &&
                      (g == want_out || (std::isnan(g) && std::isnan(want_out)));
      if (!ok && ++bad <= 5)
        ADD_FAILURE() << "[" << s << "," << f << "]: arg " << arg[static_cast<size_t>(s * ld_arg + f)] << ", out " << g
                      << "; expected arg " << want << ", out " << want_out;
    }
  }
  EXPECT_EQ(bad, 0) << bad << " of " << n * F << " winners differ";
  expect_padding_kept(got, "out");
}

template <class I, class V>
void check_segment_backward(Segments kind, uint64_t seed, bool shuffled) {
  std::mt19937_64 rng(seed);
  int64_t n = 0;
  std::vector<int64_t> idx64 = sorted_index(kind, n, rng);
  if (shuffled) std::shuffle(idx64.begin(), idx64.end(), rng);
  const std::vector<I> index = convert<I>(idx64);
  const int64_t E = static_cast<int64_t>(index.size());
  std::vector<int64_t> count(static_cast<size_t>(n), 0), pos(static_cast<size_t>(E)), start(static_cast<size_t>(n) + 1, 0);
  for (int64_t s : idx64) ++count[static_cast<size_t>(s)];
  for (int64_t s = 0; s < n; ++s) start[static_cast<size_t>(s) + 1] = start[static_cast<size_t>(s)] + count[static_cast<size_t>(s)];
  // A stable counting sort: a message's position in the SegmentCsr (e itself for a sorted index).
  for (int64_t e = 0; e < E; ++e) pos[static_cast<size_t>(e)] = start[static_cast<size_t>(idx64[static_cast<size_t>(e)])]++;
  int run = 0;
  for (const int64_t F : {int64_t{1}, int64_t{5}, int64_t{17}}) {
    const int64_t ld = F + run % 2;
    ++run;
    const HostDense<V> src = messages<V>(kind, E, F, ld, rng);
    const HostDense<V> dout = random_dense<V>(n, F, ld, rng);
    const auto msg = [&](int64_t e, int64_t f) { return src(e, f); };
    for (const Reduce r : kReduces) {
      const bool by_arg = r == Reduce::max || r == Reduce::min;
      const std::vector<int64_t> win = by_arg ? winners(idx64, n, F, r, msg) : std::vector<int64_t>{};
      HostDense<double> want(E, F), bound(E, F);
      for (int64_t e = 0; e < E; ++e) {
        const int64_t s = idx64[static_cast<size_t>(e)];
        for (int64_t f = 0; f < F; ++f) {
          double g = static_cast<double>(dout(s, f));
          if (r == Reduce::mean) g /= static_cast<double>(count[static_cast<size_t>(s)]);
          if (by_arg && win[static_cast<size_t>(s * F + f)] != e) g = 0.0;
          want(e, f) = g;
          bound(e, f) = std::fabs(g);
        }
      }
      for (const auto& ctx : backends()) {
        for (const bool keep : {false, true}) {
          SCOPED_TRACE(std::string("backend ") + ctx->backend() + ", F " + std::to_string(F) + ", reduce " + name(r) +
                       (keep ? ", a kept SegmentCsr" : ", no SegmentCsr"));
          Stage st(*ctx);
          const IndexView iv = st.index(index);
          std::optional<SegmentCsr> csr;
          if (keep) csr.emplace(*ctx, iv, n, value_type_of<V>());
          std::vector<I> arg0(static_cast<size_t>(n * (F + 1)), I(-7));
          I* arg_dev = st.put(arg0);
          const ArgMutView arg = arg_mut(arg_dev, n, F, F + 1);
          if (by_arg) {
            const DenseMutView out = st.dense_mut(nan_dense<V>(n, F, ld));
            SegmentArgOptions ao;
            ao.reduce = r;
            ao.csr = keep ? &*csr : nullptr;
            if (shuffled)
              scatter_reduce_arg(*ctx, iv, st.dense(src), out, arg, ao);
            else
              segment_reduce_arg(*ctx, iv, st.dense(src), out, arg, ao);
            ctx->synchronize();
            expect_winners<I, V>(st, arg_dev, n, F, F + 1, out, win, pos, msg);
          }
          const DenseMutView dsrc = st.dense_mut(nan_dense<V>(E, F, ld));
          SegmentBackwardOptions bo;
          bo.reduce = r;
          bo.csr = keep ? &*csr : nullptr;
          bo.arg = arg;
          if (shuffled)
            scatter_reduce_backward(*ctx, iv, st.dense(dout), dsrc, bo);
          else
            segment_reduce_backward(*ctx, iv, st.dense(dout), dsrc, bo);
          ctx->synchronize();
          const HostDense<V> got = st.fetch<V>(dsrc);
          expect_close(got, want, bound, [](int64_t) { return 4; }, "dsrc");
          expect_padding_kept(got, "dsrc");
        }
      }
    }
  }
}

std::vector<SegmentCase> segment_cases() {
  std::vector<SegmentCase> out;
  for (Segments s : {Segments::random, Segments::none, Segments::mega, Segments::singletons, Segments::mostly_empty,
                     Segments::ties, Segments::nan})
    for (const Types& t : kAllTypes) out.push_back({s, t});
  return out;
}

class SegmentBackwardConformance : public ::testing::TestWithParam<SegmentCase> {};

TEST_P(SegmentBackwardConformance, SegmentReduceArgAndBackward) {
  const SegmentCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("segment_reduce_backward/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_segment_backward<I, V>(c.segments, seed, false); });
}

TEST_P(SegmentBackwardConformance, ScatterReduceArgAndBackward) {
  const SegmentCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("scatter_reduce_backward/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_segment_backward<I, V>(c.segments, seed, true); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, SegmentBackwardConformance, ::testing::ValuesIn(segment_cases()), CaseName{});

// ---- gather_scatter -----------------------------------------------------------------------------

enum class Edges {
  random,    // 500 weighted edges, 70 destinations (some without edges), 90 sources
  pattern,   // the same without weights (w = 1)
  mega,      // one destination with most of the edges
  ties,      // w = +-1 and x from {-2, ..., 2}: many equal messages
  nan,       // a NaN row of x
  no_edges,  // E = 0
};
const char* name(Edges e) {
  switch (e) {
    case Edges::random: return "random";
    case Edges::pattern: return "pattern";
    case Edges::mega: return "mega";
    case Edges::ties: return "ties";
    case Edges::nan: return "nan";
    case Edges::no_edges: return "no_edges";
  }
  return "?";
}

struct EdgesCase {
  Edges edges;
  Types types;
};
std::string name(const EdgesCase& c) { return std::string(name(c.edges)) + "_" + name(c.types); }

template <class I, class V>
HostCoo<I, V> make_edges(Edges kind, std::mt19937_64& rng) {
  HostCoo<I, V> g;
  g.rows = 70;
  g.cols = 90;
  auto uniform = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  std::vector<int64_t> dst;
  if (kind == Edges::mega) dst.assign(1500, 9);
  if (kind != Edges::no_edges)
    for (int e = 0; e < 500; ++e) dst.push_back(uniform(1, g.rows - 2));  // the first and the last without edges
  std::sort(dst.begin(), dst.end());
  for (int64_t d : dst) {
    g.row.push_back(static_cast<I>(d));
    g.col.push_back(static_cast<I>(uniform(0, g.cols - 1)));
    if (kind == Edges::ties) g.values.push_back(uniform(0, 1) == 0 ? V(-1) : V(1));
    else if (kind != Edges::pattern) g.values.push_back(static_cast<V>(std::uniform_real_distribution<double>(-1, 1)(rng)));
  }
  return g;
}

template <class I, class V>
void check_gather_scatter_backward(Edges kind, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const HostCoo<I, V> g = make_edges<I, V>(kind, rng);
  const int64_t E = g.nnz();
  std::vector<int64_t> dst(static_cast<size_t>(E)), count(static_cast<size_t>(g.rows), 0), pos(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    dst[static_cast<size_t>(e)] = g.row[static_cast<size_t>(e)];
    ++count[static_cast<size_t>(dst[static_cast<size_t>(e)])];
    pos[static_cast<size_t>(e)] = e;  // dst is sorted: the CSR's positions are the edge numbers
  }
  const auto weight = [&](int64_t e) { return g.values.empty() ? V(1) : g.values[static_cast<size_t>(e)]; };
  for (const int64_t F : {int64_t{1}, int64_t{6}}) {
    HostDense<V> x = kind == Edges::ties ? HostDense<V>(g.cols, F) : random_dense<V>(g.cols, F, F, rng);
    std::uniform_int_distribution<int> small(-2, 2);
    if (kind == Edges::ties)
      for (int64_t j = 0; j < g.cols; ++j)
        for (int64_t f = 0; f < F; ++f) x(j, f) = static_cast<V>(small(rng));
    if (kind == Edges::nan) x(g.cols / 2, 0) = std::numeric_limits<V>::quiet_NaN();
    const HostDense<V> dout = random_dense<V>(g.rows, F, F + 1, rng);
    // The message as the kernels form it: w[e] * x[src[e], f] in the value type.
    const auto msg = [&](int64_t e, int64_t f) { return static_cast<V>(weight(e) * x(g.col[static_cast<size_t>(e)], f)); };
    for (const Reduce r : kReduces) {
      const bool by_arg = r == Reduce::max || r == Reduce::min;
      const std::vector<int64_t> win = by_arg ? winners(dst, g.rows, F, r, msg) : std::vector<int64_t>{};
      HostDense<double> dx(g.cols, F), dx_abs(g.cols, F);
      std::vector<double> dw(static_cast<size_t>(E), 0.0), dw_abs(static_cast<size_t>(E), 0.0);
      for (int64_t e = 0; e < E; ++e) {
        const int64_t d = dst[static_cast<size_t>(e)], s = g.col[static_cast<size_t>(e)];
        const double c = r == Reduce::mean ? 1.0 / static_cast<double>(count[static_cast<size_t>(d)]) : 1.0;
        for (int64_t f = 0; f < F; ++f) {
          if (by_arg && win[static_cast<size_t>(d * F + f)] != e) continue;
          const double gd = static_cast<double>(dout(d, f)) * c, w = static_cast<double>(weight(e)),
                       xs = static_cast<double>(x(s, f));
          dx(s, f) += gd * w;
          dx_abs(s, f) += std::fabs(gd * w);
          dw[static_cast<size_t>(e)] += gd * xs;
          dw_abs[static_cast<size_t>(e)] += std::fabs(gd * xs);
        }
      }
      for (const auto& ctx : backends()) {
        for (const bool keep : {false, true}) {
          SCOPED_TRACE(std::string("backend ") + ctx->backend() + ", F " + std::to_string(F) + ", reduce " + name(r) +
                       (keep ? ", a kept SegmentCsr" : ", no SegmentCsr"));
          Stage st(*ctx);
          const CooView ev = st.coo(g);
          std::optional<SegmentCsr> csr;
          if (keep) csr.emplace(*ctx, ev);
          std::vector<I> arg0(static_cast<size_t>(g.rows * F), I(-7));
          I* arg_dev = st.put(arg0);
          const ArgMutView arg = arg_mut(arg_dev, g.rows, F, F);
          const DenseView xv = st.dense(x);
          if (by_arg) {
            const DenseMutView out = st.dense_mut(nan_dense<V>(g.rows, F, F));
            SegmentArgOptions ao;
            ao.reduce = r;
            ao.csr = keep ? &*csr : nullptr;
            gather_scatter_arg(*ctx, ev, xv, out, arg, ao);
            ctx->synchronize();
            expect_winners<I, V>(st, arg_dev, g.rows, F, F, out, win, pos, msg);
          }
          GatherScatterGrads grads;
          grads.dx = st.dense_mut(nan_dense<V>(g.cols, F, F + 1));
          grads.dvalues = st.dense_mut(nan_dense<V>(E, 1, 1));
          SegmentBackwardOptions bo;
          bo.reduce = r;
          bo.csr = keep ? &*csr : nullptr;
          bo.arg = arg;
          gather_scatter_backward(*ctx, ev, xv, st.dense(dout), grads, bo);
          ctx->synchronize();
          const auto terms = [&](int64_t) { return E + F; };
          const HostDense<V> got_dx = st.fetch<V>(grads.dx);
          expect_close(got_dx, dx, dx_abs, terms, "dx");
          expect_padding_kept(got_dx, "dx");
          expect_close(st.fetch<V>(grads.dvalues), column_of(dw), column_of(dw_abs), terms, "dvalues");
        }
      }
    }
  }
}

std::vector<EdgesCase> edges_cases() {
  std::vector<EdgesCase> out;
  for (Edges e : {Edges::random, Edges::pattern, Edges::mega, Edges::ties, Edges::nan, Edges::no_edges})
    for (const Types& t : kAllTypes) out.push_back({e, t});
  return out;
}

class GatherScatterBackwardConformance : public ::testing::TestWithParam<EdgesCase> {};

TEST_P(GatherScatterBackwardConformance, ArgAndBackward) {
  const EdgesCase& c = GetParam();
  SPARSEPORT_CONFORMANCE_SEED("gather_scatter_backward/" + name(c));
  with_types(c.types, [&]<class I, class V>() { check_gather_scatter_backward<I, V>(c.edges, seed); });
}

INSTANTIATE_TEST_SUITE_P(Inputs, GatherScatterBackwardConformance, ::testing::ValuesIn(edges_cases()), CaseName{});

// ---- errors -------------------------------------------------------------------------------------

bool has(const std::string& message, const std::string& part) {
  if (message.find(part) != std::string::npos) return true;
  ADD_FAILURE() << "the message\n  " << message << "\ndoes not say\n  " << part;
  return false;
}

TEST(AttentionBackwardConformance, BadArgumentsNameTheFunctionAndNumbers) {
  HostCsr<int32_t, float> a;
  a.rows = 2;
  a.cols = 3;
  a.rowptr = {0, 1, 3};
  a.colind = {0, 1, 2};
  const HostDense<float> q(2, 4), k(3, 4), v(3, 5), out(2, 5), dout(2, 5);
  HostDense<float> dq(2, 4), dk(3, 4), dv(3, 5), bad_dq(3, 4), bad_dv(3, 4);
  const Context& ctx = oracle();
  const std::string w = "sparseport::csr_attention_backward[reference]: ";
  const auto run = [&](const DenseView& dout_, const AttentionGrads& grads, const Transpose* t = nullptr,
                       const DenseView& k_ = {}) {
    return message_of([&] {
      csr_attention_backward(ctx, a.view(), q.view(), k_.data != nullptr ? k_ : k.view(), v.view(), out.view(), dout_,
                             grads, 0.0, t);
    });
  };
  AttentionGrads grads;
  grads.dq = bad_dq.mut();
  has(run(dout.view(), grads), w + "dQ is 3x4 but must be 2x4 (need dQ to be A.rows x Q.cols)");
  grads.dq = dq.mut();
  grads.dv = bad_dv.mut();
  has(run(dout.view(), grads), w + "dV is 3x4 but must be 3x5 (need dV to be A.cols x V.cols)");
  grads.dv = dv.mut();
  const HostDense<float> bad_dout(2, 4);
  has(run(bad_dout.view(), grads), w + "dout is 2x4 but must be 2x5");
  const HostDense<float> bad_k(3, 2);
  has(run(dout.view(), grads, nullptr, bad_k.view()), w + "K is 3x2 but must be 3x4");
  HostCsr<int32_t, float> other = a;
  const Transpose t(ctx, other.view());
  has(run(dout.view(), grads, &t), w + "the Transpose given was built for another A");
  CsrView as_f64 = a.view();  // the same arrays with values of another type
  as_f64.value_type = ValueType::f64;
  const Transpose t64(ctx, as_f64);
  has(run(dout.view(), grads, &t64), w + "the Transpose given was built for another A (other arrays, entry count or value type)");
  has(message_of([&] {
        csr_attention_backward(ctx, a.view(), q.view(), k.view(), v.view(), out.view(), dout.view(), grads,
                               std::numeric_limits<double>::infinity());
      }),
      w + "scale inf is not finite");
}

TEST(SegmentBackwardConformance, BadArgumentsNameTheFunctionAndNumbers) {
  const std::vector<int32_t> sorted = {0, 0, 2, 3}, unsorted = {2, 0, 3, 0};
  const HostDense<float> src(4, 3), dout(5, 3);
  HostDense<float> out(5, 3), dsrc(4, 3), bad_dsrc(5, 3);
  std::vector<int32_t> arg(15);
  const ArgMutView argv{5, 3, 3, arg.data(), IndexType::i32};
  const Context& ctx = oracle();
  const IndexView iv = make_index<int32_t>(4, sorted.data()), uv = make_index<int32_t>(4, unsorted.data());
  SegmentArgOptions ao;
  has(message_of([&] { segment_reduce_arg(ctx, uv, src.view(), out.mut(), argv, ao); }),
      "sparseport::segment_reduce_arg[reference]: index must be sorted ascending but index[0] = 2 > index[1] = 0");
  ao.reduce = Reduce::sum;
  has(message_of([&] { scatter_reduce_arg(ctx, uv, src.view(), out.mut(), argv, ao); }),
      "sparseport::scatter_reduce_arg[reference]: reduce is sum; only max and min have a winning entry to record");
  ao.reduce = Reduce::max;
  const ArgMutView short_arg{4, 3, 3, arg.data(), IndexType::i32};
  has(message_of([&] { scatter_reduce_arg(ctx, uv, src.view(), out.mut(), short_arg, ao); }),
      "sparseport::scatter_reduce_arg[reference]: arg is 4 x 3 with ld 3; need 5 x 3 (out's shape) with ld >= cols");
  const HostDense<float> short_src(3, 3);
  has(message_of([&] { segment_reduce_arg(ctx, iv, short_src.view(), out.mut(), argv, ao); }),
      "sparseport::segment_reduce_arg[reference]: src is 3x3 but must be 4x3 (need one row of src per index entry)");
  SegmentBackwardOptions bo;
  has(message_of([&] { segment_reduce_backward(ctx, iv, dout.view(), bad_dsrc.mut(), bo); }),
      "sparseport::segment_reduce_backward[reference]: dsrc is 5x3 but must be 4x3 (need dsrc to be index.n x dout.cols)");
  bo.reduce = Reduce::min;
  has(message_of([&] { scatter_reduce_backward(ctx, uv, dout.view(), dsrc.mut(), bo); }),
      "sparseport::scatter_reduce_backward[reference]: reduce min needs the forward's arg");
  bo.arg = short_arg;
  has(message_of([&] { scatter_reduce_backward(ctx, uv, dout.view(), dsrc.mut(), bo); }),
      "sparseport::scatter_reduce_backward[reference]: arg is 4 x 3 with ld 3; need 5 x 3 (dout's shape)");
  const std::vector<int32_t> big = {0, 7};
  has(message_of([&] { scatter_reduce_backward(ctx, make_index<int32_t>(2, big.data()), dout.view(), bad_dsrc.mut(), bo); }),
      "dsrc is 5x3 but must be 2x3");
  // A SegmentCsr must be the one of this index and value type.
  const SegmentCsr for_sorted(ctx, iv, 5);
  bo.arg = argv;
  bo.csr = &for_sorted;
  has(message_of([&] { scatter_reduce_backward(ctx, uv, dout.view(), dsrc.mut(), bo); }),
      "sparseport::scatter_reduce_backward[reference]: the SegmentCsr given was built for another index");
  const HostDense<double> src64(4, 3);
  HostDense<double> out64(5, 3);
  ao.csr = &for_sorted;
  has(message_of([&] { segment_reduce_arg(ctx, iv, src64.view(), out64.mut(), argv, ao); }),
      "sparseport::segment_reduce_arg[reference]: the SegmentCsr given was built for f32 messages but this call's are f64");
  has(message_of([&] { (void)SegmentCsr(ctx, uv, 3); }), "sparseport::SegmentCsr[reference]: index[2] is 3, outside [0, 3)");
}

TEST(GatherScatterBackwardConformance, BadArgumentsNameTheFunctionAndNumbers) {
  HostCoo<int32_t, float> g;
  g.rows = 3;
  g.cols = 4;
  g.row = {0, 1, 1};
  g.col = {3, 0, 2};
  g.values = {1.f, 2.f, 3.f};
  const HostDense<float> x(4, 2), dout(3, 2);
  HostDense<float> dx(4, 2), bad_dx(3, 2), dw(3, 1), bad_dw(2, 1), out(3, 2);
  std::vector<int32_t> arg(6);
  const Context& ctx = oracle();
  const std::string w = "sparseport::gather_scatter_backward[reference]: ";
  GatherScatterGrads grads;
  grads.dx = bad_dx.mut();
  SegmentBackwardOptions bo;
  has(message_of([&] { gather_scatter_backward(ctx, g.view(), x.view(), dout.view(), grads, bo); }),
      w + "dx is 3x2 but must be 4x2 (need dx to be edges.cols x dout.cols)");
  grads.dx = dx.mut();
  grads.dvalues = bad_dw.mut();
  has(message_of([&] { gather_scatter_backward(ctx, g.view(), x.view(), dout.view(), grads, bo); }),
      w + "dvalues is 2x1 but must be 3x1 (need one value per edge)");
  grads.dvalues = dw.mut();
  const HostDense<float> bad_x(4, 3);
  has(message_of([&] { gather_scatter_backward(ctx, g.view(), bad_x.view(), dout.view(), grads, bo); }),
      w + "x is 4x3 but must be 4x2 (need x to be edges.cols x dout.cols)");
  HostCoo<int32_t, float> unsorted = g;
  unsorted.row = {1, 0, 1};
  has(message_of([&] { gather_scatter_backward(ctx, unsorted.view(), x.view(), dout.view(), grads, bo); }),
      w + "edges.row (dst) must be sorted ascending");
  SegmentArgOptions ao;
  has(message_of([&] {
        gather_scatter_arg(ctx, g.view(), x.view(), out.mut(), {2, 2, 2, arg.data(), IndexType::i32}, ao);
      }),
      "sparseport::gather_scatter_arg[reference]: arg is 2 x 2 with ld 2; need 3 x 2 (out's shape) with ld >= cols");
  const HostCoo<int32_t, float> copy = g;  // the same edges in other arrays
  const SegmentCsr other(ctx, copy.view());
  bo.csr = &other;
  has(message_of([&] { gather_scatter_backward(ctx, g.view(), x.view(), dout.view(), grads, bo); }),
      w + "the SegmentCsr given was built for other edges");
}

}  // namespace
}  // namespace sparseport::testing
