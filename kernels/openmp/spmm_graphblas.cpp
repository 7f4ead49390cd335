// SPDX-License-Identifier: Apache-2.0
// spmm.graphblas: SuiteSparse:GraphBLAS GrB_mxm as the CPU vendor baseline of the openmp plugin.
// Compiled once (GraphBLAS does the math, so there is no ISA copy) and only when
// SPARSEPORT_ENABLE_GRAPHBLAS is on.
//
// How the ABI maps onto GraphBLAS:
//  - sum: C += A*B with the PLUS_TIMES semiring (PLUS_SECOND for a pattern A: every value is 1, so
//    the product is just B's entry) and PLUS as accumulator. With C full and the accumulator equal
//    to the semiring's monoid, GraphBLAS 7 updates C in place (its saxpy4 method) instead of
//    building A*B apart and adding it.
//  - mean: the same sum, then each row divided by its degree (duplicates count, as in the ABI).
//  - max/min: the MAX_TIMES / MIN_TIMES semirings (MAX_SECOND / MIN_SECOND for a pattern), with C
//    started at the monoid's identity and MAX/MIN as accumulator.
//  - alpha/beta: C = alpha*reduce + beta*C. Where one of them is trivial the old C is folded in
//    place (beta == 0: C starts at 0 or at the identity, then is scaled by alpha; alpha == 1 with
//    sum/mean: C is prescaled by beta*degree, so dividing by the degree afterwards leaves beta*C).
//    Otherwise (beta != 0 and alpha != 1 for sum/mean, beta != 0 for max/min) the reduction goes
//    to an m x F temporary that is then combined with C: one extra pass, and it is reported.
//  - Rows of A with no entries get no entry in A*B; the accumulator leaves C there untouched, and
//    the pre/post passes give them alpha*0 + beta*C.
//
// Copies: B and C are lent to GraphBLAS without a copy (GxB_Matrix_pack_FullR, unpacked after the
// call) when their leading dimension equals F; A is lent without a copy (GxB_Matrix_pack_CSR)
// when its indices are 64-bit and every row is strictly increasing. Everything else is copied:
// 32-bit indices are widened (GraphBLAS 7 indices are uint64), unsorted rows or rows with repeated
// columns go through GrB_Matrix_build (which merges repeats with PLUS), and a padded B or C is
// staged in a contiguous buffer. SPARSEPORT_LOG=graphblas prints, per call, what was lent and what
// was copied (bytes). The copies are part of the time measured for this variant, as they would be
// for a user who has the same arrays.
//
// GraphBLAS owns nothing of ours after a call: each packed matrix is unpacked before it is freed,
// and its sparsity is pinned (sparse for A, full for B and C) so that GraphBLAS has no reason to
// convert, and with that reallocate or free, memory it does not own.
// GraphBLAS.h has no extern "C" of its own (it expects C++ callers to add one; its complex types
// sit in an extern "C++" block for that reason).
extern "C" {
#include <GraphBLAS.h>
}
#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/openmp/kernels.hpp"
#include "core/plugin_support.hpp"

namespace sparseport::openmp {
namespace {

constexpr const char* kWhere = "sparseport::spmm[openmp]: spmm.graphblas";

const char* info_name(GrB_Info info) {
  switch (info) {
    case GrB_SUCCESS: return "GrB_SUCCESS";
    case GrB_NO_VALUE: return "GrB_NO_VALUE";
    case GrB_UNINITIALIZED_OBJECT: return "GrB_UNINITIALIZED_OBJECT";
    case GrB_NULL_POINTER: return "GrB_NULL_POINTER";
    case GrB_INVALID_VALUE: return "GrB_INVALID_VALUE";
    case GrB_INVALID_INDEX: return "GrB_INVALID_INDEX";
    case GrB_DOMAIN_MISMATCH: return "GrB_DOMAIN_MISMATCH";
    case GrB_DIMENSION_MISMATCH: return "GrB_DIMENSION_MISMATCH";
    case GrB_OUTPUT_NOT_EMPTY: return "GrB_OUTPUT_NOT_EMPTY";
    case GrB_NOT_IMPLEMENTED: return "GrB_NOT_IMPLEMENTED";
    case GrB_OUT_OF_MEMORY: return "GrB_OUT_OF_MEMORY";
    case GrB_INSUFFICIENT_SPACE: return "GrB_INSUFFICIENT_SPACE";
    case GrB_INVALID_OBJECT: return "GrB_INVALID_OBJECT";
    case GrB_INDEX_OUT_OF_BOUNDS: return "GrB_INDEX_OUT_OF_BOUNDS";
    case GrB_EMPTY_OBJECT: return "GrB_EMPTY_OBJECT";
    case GrB_PANIC: return "GrB_PANIC";
    default: return "GrB_?";
  }
}

// The one place where GraphBLAS status codes become exceptions.
void check(GrB_Info info, const std::string& what) {
  if (info == GrB_SUCCESS) return;
  throw BackendError(std::string(kWhere) + ": " + what + " failed with " + info_name(info) + " (" +
                         std::to_string(static_cast<int>(info)) + ")",
                     static_cast<int>(info), info_name(info));
}

// GraphBLAS is started once per process. A program that started it itself (GrB_init returns
// GrB_INVALID_VALUE on a second call) keeps its mode; it is never finalised here, since the
// program may still be using it, and GrB_finalize is optional.
void ensure_init() {
  static std::once_flag once;
  static GrB_Info result = GrB_SUCCESS;
  std::call_once(once, [] {
    result = GrB_init(GrB_NONBLOCKING);
    if (result == GrB_INVALID_VALUE) result = GrB_SUCCESS;
  });
  check(result, "GrB_init(GrB_NONBLOCKING)");
}

bool log_enabled() {
  static const bool on = [] {
    const char* v = std::getenv("SPARSEPORT_LOG");
    return v != nullptr && std::string_view(v).find("graphblas") != std::string_view::npos;
  }();
  return on;
}

template <class V>
GrB_Type grb_type() {
  return std::is_same_v<V, double> ? GrB_FP64 : GrB_FP32;
}

template <class V>
GrB_Semiring semiring(int32_t reduce, bool pattern) {
  constexpr bool d = std::is_same_v<V, double>;
  switch (reduce) {
    case SPARSEPORT_REDUCE_MAX:
      return pattern ? (d ? GxB_MAX_SECOND_FP64 : GxB_MAX_SECOND_FP32) : (d ? GxB_MAX_TIMES_FP64 : GxB_MAX_TIMES_FP32);
    case SPARSEPORT_REDUCE_MIN:
      return pattern ? (d ? GxB_MIN_SECOND_FP64 : GxB_MIN_SECOND_FP32) : (d ? GxB_MIN_TIMES_FP64 : GxB_MIN_TIMES_FP32);
    default:
      return pattern ? (d ? GxB_PLUS_SECOND_FP64 : GxB_PLUS_SECOND_FP32)
                     : (d ? GrB_PLUS_TIMES_SEMIRING_FP64 : GrB_PLUS_TIMES_SEMIRING_FP32);
  }
}

template <class V>
GrB_BinaryOp accumulator(int32_t reduce) {
  constexpr bool d = std::is_same_v<V, double>;
  if (reduce == SPARSEPORT_REDUCE_MAX) return d ? GrB_MAX_FP64 : GrB_MAX_FP32;
  if (reduce == SPARSEPORT_REDUCE_MIN) return d ? GrB_MIN_FP64 : GrB_MIN_FP32;
  return d ? GrB_PLUS_FP64 : GrB_PLUS_FP32;
}

// A GrB_Matrix that is freed on every path; a packed one is unpacked first (see Lent*).
struct Matrix {
  GrB_Matrix m = nullptr;
  Matrix() = default;
  Matrix(const Matrix&) = delete;
  Matrix& operator=(const Matrix&) = delete;
  ~Matrix() {
    if (m != nullptr) GrB_Matrix_free(&m);
  }
};

// A row-major dense block lent to GraphBLAS as a full matrix. The destructor takes it back even
// when an exception unwinds, so GrB_Matrix_free never frees memory that is not GraphBLAS's.
class LentFull {
 public:
  LentFull(GrB_Type type, int64_t rows, int64_t cols, void* data, size_t value_bytes, const std::string& name)
      : data_(data), name_(name) {
    check(GrB_Matrix_new(&mat_.m, type, static_cast<GrB_Index>(rows), static_cast<GrB_Index>(cols)),
          "GrB_Matrix_new for " + name + " (" + std::to_string(rows) + "x" + std::to_string(cols) + ")");
    void* p = data;
    check(GxB_Matrix_pack_FullR(mat_.m, &p, static_cast<GrB_Index>(rows * cols) * value_bytes, false, nullptr),
          "GxB_Matrix_pack_FullR of " + name + " (" + std::to_string(rows) + "x" + std::to_string(cols) + ")");
    packed_ = true;
    // Pinned after the pack: pinning an empty matrix to full first makes GraphBLAS allocate and
    // fill a rows x cols block only to free it in the pack (GxB_BURBLE showed 90 + 16 ms per
    // 256 MB operand, five times the product itself).
    check(GxB_Matrix_Option_set(mat_.m, GxB_SPARSITY_CONTROL, GxB_FULL), "pinning " + name + " to full");
  }
  LentFull(const LentFull&) = delete;
  LentFull& operator=(const LentFull&) = delete;
  ~LentFull() {
    if (packed_) {
      void* p = nullptr;
      GrB_Index bytes = 0;
      bool iso = false;
      GxB_Matrix_unpack_FullR(mat_.m, &p, &bytes, &iso, nullptr);
    }
  }
  GrB_Matrix get() const { return mat_.m; }

  // Takes the block back and checks that GraphBLAS wrote the result where we lent it.
  void give_back() {
    void* p = nullptr;
    GrB_Index bytes = 0;
    bool iso = false;
    packed_ = false;
    check(GxB_Matrix_unpack_FullR(mat_.m, &p, &bytes, &iso, nullptr), "GxB_Matrix_unpack_FullR of " + name_);
    if (p != data_ || iso) {
      // Not expected with the sparsity pinned to full; if it happens, the result is not ours.
      if (p != data_) std::free(p);
      throw BackendError(std::string(kWhere) + ": GraphBLAS returned " + name_ + " in memory other than the lent block (" +
                             (iso ? "iso-valued" : "moved") + "); the result is lost",
                         0, "GxB_Matrix_unpack_FullR");
    }
  }

 private:
  Matrix mat_;
  void* data_;
  std::string name_;
  bool packed_ = false;
};

// A CSR matrix whose arrays are lent to GraphBLAS (ours or the caller's, already 64-bit).
class LentCsr {
 public:
  LentCsr(GrB_Type type, int64_t rows, int64_t cols, int64_t nnz, GrB_Index* rowptr, GrB_Index* colind, void* values,
          size_t values_bytes, bool iso)
      : rowptr_(rowptr), colind_(colind), values_(values) {
    check(GrB_Matrix_new(&mat_.m, type, static_cast<GrB_Index>(rows), static_cast<GrB_Index>(cols)),
          "GrB_Matrix_new for A (" + std::to_string(rows) + "x" + std::to_string(cols) + ")");
    GrB_Index* p = rowptr;
    GrB_Index* j = colind;
    void* x = values;
    check(GxB_Matrix_pack_CSR(mat_.m, &p, &j, &x, static_cast<GrB_Index>(rows + 1) * sizeof(GrB_Index),
                              static_cast<GrB_Index>(nnz) * sizeof(GrB_Index), values_bytes, iso, false, nullptr),
          "GxB_Matrix_pack_CSR of A (" + std::to_string(rows) + "x" + std::to_string(cols) + ", nnz " +
              std::to_string(nnz) + ")");
    packed_ = true;
    // After the pack, as for LentFull: kept sparse, so GraphBLAS never converts the lent arrays.
    check(GxB_Matrix_Option_set(mat_.m, GxB_SPARSITY_CONTROL, GxB_SPARSE), "pinning A to sparse");
  }
  LentCsr(const LentCsr&) = delete;
  LentCsr& operator=(const LentCsr&) = delete;
  ~LentCsr() {
    if (!packed_) return;
    GrB_Index *p = nullptr, *j = nullptr;
    void* x = nullptr;
    GrB_Index ps = 0, js = 0, xs = 0;
    bool iso = false, jumbled = false;
    GxB_Matrix_unpack_CSR(mat_.m, &p, &j, &x, &ps, &js, &xs, &iso, &jumbled, nullptr);
  }
  GrB_Matrix get() const { return mat_.m; }

 private:
  Matrix mat_;
  GrB_Index *rowptr_, *colind_;
  void* values_;
  bool packed_ = false;
};

// Per-row facts about A that decide how it reaches GraphBLAS.
struct Structure {
  bool strictly_increasing = true;  // every row sorted with no repeated column
};

template <class I>
Structure inspect(const I* rp, const I* ci, int64_t rows, int threads) {
  int irregular = 0;
#pragma omp parallel for num_threads(threads) schedule(static) reduction(| : irregular)
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t e = rp[i] + 1; e < rp[i + 1]; ++e)
      if (ci[e] <= ci[e - 1]) {
        irregular = 1;
        break;
      }
  return {irregular == 0};
}

// The first row holding a repeated column, or -1; rows that are not sorted are sorted in a copy.
template <class I>
int64_t first_repeat(const I* rp, const I* ci, int64_t rows, int64_t* column) {
  int64_t found = -1, col = -1;
  std::vector<I> row;
  for (int64_t i = 0; i < rows && found < 0; ++i) {
    const int64_t b = rp[i], e = rp[i + 1];
    bool sorted = true;
    for (int64_t t = b + 1; t < e && sorted; ++t) sorted = ci[t] > ci[t - 1];
    if (sorted) continue;
    row.assign(ci + b, ci + e);
    std::sort(row.begin(), row.end());
    for (size_t t = 1; t < row.size(); ++t)
      if (row[t] == row[t - 1]) {
        found = i, col = row[t];
        break;
      }
  }
  *column = col;
  return found;
}

// dst = a * src (+ b * dst when b != 0) over the first F elements of each row; b == 0 does not
// read dst, so NaN in a C the caller asked to overwrite cannot leak through 0 * NaN.
template <class V>
void combine_rows(V* dst, int64_t ld_dst, const V* src, int64_t ld_src, int64_t rows, int64_t f, const double* a,
                  const double* b, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < rows; ++i) {
    V* d = dst + i * ld_dst;
    // A zero factor drops the source row unread: the rows of empty A rows hold the identity (inf).
    const V ai = static_cast<V>(a[i]), bi = static_cast<V>(b[i]);
    const V* s = src != nullptr && ai != V(0) ? src + i * ld_src : nullptr;
    if (s == nullptr && bi == V(1)) continue;
    for (int64_t j = 0; j < f; ++j) {
      const V from_src = s != nullptr ? ai * s[j] : V(0);
      d[j] = bi != V(0) ? from_src + bi * d[j] : from_src;
    }
  }
}

template <class V>
void fill_rows(V* dst, int64_t ld, int64_t rows, int64_t f, const std::vector<char>& which, V value, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t i = 0; i < rows; ++i)
    if (which[static_cast<size_t>(i)] != 0) std::fill(dst + i * ld, dst + i * ld + f, value);
}

template <class I, class V>
void run(const sparseport_spmm_args& args, int threads) {
  const int64_t m = args.a.rows, k = args.a.cols, nnz = args.a.nnz, f = args.c.cols;
  const I* rp = detail::as<I>(args.a.rowptr);
  const I* ci = detail::as<I>(args.a.colind);
  const V* av = detail::as<V>(args.a.values);
  V* c = detail::as_mut<V>(args.c.data);
  const double alpha = args.alpha, beta = args.beta;
  const int32_t reduce = args.reduce;
  const bool is_sum = reduce == SPARSEPORT_REDUCE_SUM || reduce == SPARSEPORT_REDUCE_MEAN;
  const bool is_mean = reduce == SPARSEPORT_REDUCE_MEAN;
  std::string log;
  auto note = [&](const std::string& s) {
    if (log_enabled()) log += (log.empty() ? "" : "; ") + s;
  };

  std::vector<double> pre(static_cast<size_t>(m)), post(static_cast<size_t>(m));
  std::vector<char> nonempty(static_cast<size_t>(m));
  for (int64_t i = 0; i < m; ++i) nonempty[static_cast<size_t>(i)] = rp[i + 1] > rp[i] ? 1 : 0;

  // Nothing to reduce: every row is alpha*0 + beta*C.
  if (nnz == 0 || alpha == 0.0) {
    std::fill(pre.begin(), pre.end(), 0.0);
    std::fill(post.begin(), post.end(), beta);
    combine_rows<V>(c, args.c.ld, nullptr, 0, m, f, pre.data(), post.data(), threads);
    return;
  }
  ensure_init();
  const GrB_Type type = grb_type<V>();

  // ---- A ----
  Matrix built;  // the copy, when A cannot be lent as it is
  // Widened indices live in per-thread buffers kept between calls: a fresh 100 MB vector per call
  // costs more in page faults than the copy itself. The references are ordinary locals, so the
  // OpenMP team below shares the calling thread's buffers (not each its own thread_local).
  thread_local std::vector<GrB_Index> kept_rp64, kept_ci64;
  std::vector<GrB_Index>& rp64 = kept_rp64;
  std::vector<GrB_Index>& ci64 = kept_ci64;
  V* one = nullptr;  // the iso value of a pattern A
  struct FreeOne {
    V*& p;
    ~FreeOne() { std::free(p); }
  } free_one{one};
  std::unique_ptr<LentCsr> lent_a;
  GrB_Matrix a_mat = nullptr;
  const bool pattern = av == nullptr;
  const Structure st = inspect(rp, ci, m, threads);
  if (st.strictly_increasing) {
    GrB_Index *p = nullptr, *j = nullptr;
    if constexpr (sizeof(I) == sizeof(GrB_Index)) {
      // Same width and bits (indices are non-negative): lent as they are.
      p = reinterpret_cast<GrB_Index*>(const_cast<I*>(rp));
      j = reinterpret_cast<GrB_Index*>(const_cast<I*>(ci));
      note("A lent (64-bit indices)");
    } else {
      rp64.resize(static_cast<size_t>(m) + 1);
      ci64.resize(static_cast<size_t>(nnz));
#pragma omp parallel num_threads(threads)
      {
#pragma omp for schedule(static) nowait
        for (int64_t i = 0; i <= m; ++i) rp64[static_cast<size_t>(i)] = static_cast<GrB_Index>(rp[i]);
#pragma omp for schedule(static)
        for (int64_t e = 0; e < nnz; ++e) ci64[static_cast<size_t>(e)] = static_cast<GrB_Index>(ci[e]);
      }
      p = rp64.data();
      j = ci64.data();
      note("A indices widened to 64 bit (copy of " + std::to_string((m + 1 + nnz) * 8) + " bytes)");
    }
    void* x = nullptr;
    size_t x_bytes = 0;
    if (pattern) {
      one = static_cast<V*>(std::malloc(sizeof(V)));
      if (one == nullptr) throw std::bad_alloc();
      *one = V(1);
      x = one;
      x_bytes = sizeof(V);
    } else {
      x = const_cast<V*>(av);
      x_bytes = static_cast<size_t>(nnz) * sizeof(V);
    }
    lent_a = std::make_unique<LentCsr>(type, m, k, nnz, p, j, x, x_bytes, pattern);
    a_mat = lent_a->get();
  } else {
    // Unsorted rows or repeated columns: GraphBLAS matrices hold neither, so A is rebuilt from
    // triplets and repeats are merged with PLUS (exact for sum and mean; applies() refuses max/min
    // on such inputs). GrB_Matrix_build has no descriptor: its threads are the global setting.
    std::vector<GrB_Index> ri(static_cast<size_t>(nnz)), cj(static_cast<size_t>(nnz));
    std::vector<V> xv(static_cast<size_t>(nnz));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t e = rp[i]; e < rp[i + 1]; ++e) {
        ri[static_cast<size_t>(e)] = static_cast<GrB_Index>(i);
        cj[static_cast<size_t>(e)] = static_cast<GrB_Index>(ci[e]);
        xv[static_cast<size_t>(e)] = pattern ? V(1) : av[e];
      }
    check(GrB_Matrix_new(&built.m, type, static_cast<GrB_Index>(m), static_cast<GrB_Index>(k)),
          "GrB_Matrix_new for A (" + std::to_string(m) + "x" + std::to_string(k) + ")");
    static std::mutex build_mutex;
    std::lock_guard<std::mutex> lock(build_mutex);
    check(GxB_Global_Option_set(GxB_GLOBAL_NTHREADS, threads), "setting GxB_NTHREADS to " + std::to_string(threads));
    GrB_Info info = std::is_same_v<V, double>
                        ? GrB_Matrix_build_FP64(built.m, ri.data(), cj.data(), reinterpret_cast<double*>(xv.data()),
                                                static_cast<GrB_Index>(nnz), GrB_PLUS_FP64)
                        : GrB_Matrix_build_FP32(built.m, ri.data(), cj.data(), reinterpret_cast<float*>(xv.data()),
                                                static_cast<GrB_Index>(nnz), GrB_PLUS_FP32);
    check(info, "GrB_Matrix_build of A (" + std::to_string(m) + "x" + std::to_string(k) + ", " + std::to_string(nnz) +
                    " entries)");
    a_mat = built.m;
    note("A rebuilt from triplets: unsorted or repeated columns (copy of " +
         std::to_string(nnz * static_cast<int64_t>(16 + sizeof(V))) + " bytes)");
  }
  // The triplet path multiplies by the merged values, so it needs TIMES even for a pattern.
  const GrB_Semiring sr = semiring<V>(reduce, pattern && st.strictly_increasing);

  // ---- B ----
  std::vector<V> b_copy;
  V* b_ptr = const_cast<V*>(detail::as<V>(args.b.data));
  if (args.b.ld != f) {
    b_copy.resize(static_cast<size_t>(k * f));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t r = 0; r < k; ++r) std::memcpy(b_copy.data() + r * f, b_ptr + r * args.b.ld, sizeof(V) * f);
    b_ptr = b_copy.data();
    note("B staged: ld " + std::to_string(args.b.ld) + " != F " + std::to_string(f) + " (copy of " +
         std::to_string(k * f * static_cast<int64_t>(sizeof(V))) + " bytes)");
  } else {
    note("B lent");
  }

  // ---- C: where the reduction lands ----
  // In place when the old C can be folded in before or after (see the top of the file), else in
  // an m x F temporary combined with C afterwards.
  const bool in_place = beta == 0.0 || (is_sum && alpha == 1.0);
  std::vector<V> stage;
  V* target = c;
  int64_t target_ld = args.c.ld;
  if (!in_place || args.c.ld != f) {
    stage.resize(static_cast<size_t>(m * f));
    target = stage.data();
    target_ld = f;
    note(std::string(in_place ? "C staged: ld " + std::to_string(args.c.ld) + " != F " + std::to_string(f)
                              : "reduction staged apart from C (beta != 0" + std::string(is_sum ? ", alpha != 1" : "") + ")") +
         " (" + std::to_string(m * f * static_cast<int64_t>(sizeof(V))) + " bytes)");
  } else {
    note("C lent");
  }
  // The staged C of an in-place update starts as C (only its first F columns are used).
  if (in_place && target != c && beta != 0.0) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t i = 0; i < m; ++i) std::memcpy(target + i * f, c + i * args.c.ld, sizeof(V) * f);
  }

  // Starting values of the target rows.
  if (is_sum && in_place) {
    for (int64_t i = 0; i < m; ++i) {
      const double deg = static_cast<double>(rp[i + 1] - rp[i]);
      // beta == 0: start from 0 (never read C). alpha == 1: C prescaled so that the final
      // division by the degree leaves beta*C; an empty row is final after this pass.
      if (beta == 0.0)
        pre[static_cast<size_t>(i)] = 0.0;
      else
        pre[static_cast<size_t>(i)] = nonempty[static_cast<size_t>(i)] != 0 && is_mean ? beta * deg : beta;
    }
    std::vector<double> zero(static_cast<size_t>(m), 0.0);
    combine_rows<V>(target, target_ld, nullptr, 0, m, f, zero.data(), pre.data(), threads);
  } else {
    // max/min, or a separate target: start at the monoid's identity (0 for sum).
    const V identity = reduce == SPARSEPORT_REDUCE_MAX   ? -std::numeric_limits<V>::infinity()
                       : reduce == SPARSEPORT_REDUCE_MIN ? std::numeric_limits<V>::infinity()
                                                         : V(0);
    std::vector<char> all(static_cast<size_t>(m), 1);
    fill_rows<V>(target, target_ld, m, f, all, identity, threads);
  }

  // ---- the product ----
  {
    LentFull b_mat(type, k, f, b_ptr, sizeof(V), "B");
    LentFull c_mat(type, m, f, target, sizeof(V), target == c ? "C" : "the staged result");
    GrB_Descriptor desc = nullptr;
    check(GrB_Descriptor_new(&desc), "GrB_Descriptor_new");
    struct FreeDesc {
      GrB_Descriptor& d;
      ~FreeDesc() { GrB_Descriptor_free(&d); }
    } free_desc{desc};
    check(GxB_Desc_set(desc, GxB_DESCRIPTOR_NTHREADS, threads), "setting GxB_NTHREADS to " + std::to_string(threads));
    check(GrB_mxm(c_mat.get(), nullptr, accumulator<V>(reduce), sr, a_mat, b_mat.get(), desc),
          "GrB_mxm on A " + std::to_string(m) + "x" + std::to_string(k) + " (nnz " + std::to_string(nnz) + ") and B " +
              std::to_string(k) + "x" + std::to_string(f));
    c_mat.give_back();
    b_mat.give_back();
  }

  // ---- finishing: C = alpha * result + beta * C ----
  // scale: what multiplies a row's reduction (alpha, over the degree for mean; an empty row
  // reduces to 0). In place, the old C was folded in before the product, so only the scale is left
  // (an empty row of sum/mean with beta != 0 already holds beta*C and keeps it).
  bool all_one = true;
  for (int64_t i = 0; i < m; ++i) {
    const bool has = nonempty[static_cast<size_t>(i)] != 0;
    const double deg = static_cast<double>(rp[i + 1] - rp[i]);
    const double scale = has ? (is_mean ? alpha / deg : alpha) : 0.0;
    if (in_place) {
      post[static_cast<size_t>(i)] = has ? scale : (is_sum && beta != 0.0 ? 1.0 : 0.0);
      all_one = all_one && post[static_cast<size_t>(i)] == 1.0;
    } else {
      pre[static_cast<size_t>(i)] = scale;
      post[static_cast<size_t>(i)] = beta;
    }
  }
  if (in_place) {
    std::vector<double> zero(static_cast<size_t>(m), 0.0);
    if (!all_one) combine_rows<V>(target, target_ld, nullptr, 0, m, f, zero.data(), post.data(), threads);
    if (target != c) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t i = 0; i < m; ++i) std::memcpy(c + i * args.c.ld, target + i * f, sizeof(V) * f);
    }
  } else {
    combine_rows<V>(c, args.c.ld, target, target_ld, m, f, pre.data(), post.data(), threads);
  }
  if (!log.empty()) std::fprintf(stderr, "%s: %s\n", kWhere, log.c_str());
}

}  // namespace

void spmm_graphblas(const sparseport_spmm_args& args, int threads) {
  detail::dispatch(args.a.index_type, args.c.value_type, [&]<class I, class V>() { run<I, V>(args, threads); });
}

bool spmm_graphblas_applies(const sparseport_spmm_args& args, std::string* why) {
  if (args.reduce != SPARSEPORT_REDUCE_MAX && args.reduce != SPARSEPORT_REDUCE_MIN) return true;
  int64_t row = -1, col = -1;
  if (args.a.index_type == SPARSEPORT_I64)
    row = first_repeat(detail::as<int64_t>(args.a.rowptr), detail::as<int64_t>(args.a.colind), args.a.rows, &col);
  else
    row = first_repeat(detail::as<int32_t>(args.a.rowptr), detail::as<int32_t>(args.a.colind), args.a.rows, &col);
  if (row < 0) return true;
  if (why != nullptr)
    *why = "spmm.graphblas does not apply to reduce " + std::string(args.reduce == SPARSEPORT_REDUCE_MAX ? "max" : "min") +
           " when a row of A repeats a column (row " + std::to_string(row) + " holds column " + std::to_string(col) +
           " more than once): GraphBLAS matrices cannot hold repeats, and merging them would lose the separate products";
  return false;
}

std::string graphblas_version() {
  return "SuiteSparse:GraphBLAS " + std::to_string(GxB_IMPLEMENTATION_MAJOR) + "." +
         std::to_string(GxB_IMPLEMENTATION_MINOR) + "." + std::to_string(GxB_IMPLEMENTATION_SUB);
}

}  // namespace sparseport::openmp
