// SPDX-License-Identifier: Apache-2.0
// spmm.hub_split: rows with more than T entries (hubs) are cut into items of at most CH entries,
// each item a whole CTA; every other row gets a group of lanes as in row_warp(_vec4). Both kinds
// of work run in one launch (the first blocks take the items), so the regular rows fill the GPU
// while the hubs run. A hub of several items is combined with atomics into a per-hub accumulator,
// and the CTA that finishes the row's last item writes C; one giant row is spread over many SMs.
// The partition depends only on rowptr and is kept in the plan cache, with the order in which the
// regular rows are taken: by length within windows of consecutive rows on skewed graphs, so that the
// rows a warp and a CTA hold side by side end together (kernels/row_order.hpp). The threshold is at
// least 4 x the mean row (mean_floor).
//
// Deterministic mode (SPARSEPORT_EXEC_DETERMINISTIC) keeps the shape but fixes every summation
// order: the threshold and item length depend on nnz and rows only (SPARSEPORT_HUB_T and
// SPARSEPORT_HUB_CHUNK are ignored), a mega-row is cut into at most kDetSpread items whatever the
// SM count, regular rows get one lane group each (no slices), and a split hub's items write their
// partials to slots of their own, which a second kernel folds in item order (det_fold_kernel)
// instead of combining them with atomics. Each row's result is then a function of its entries, nnz and rows:
// the same bits for every run, knob, alignment and launch shape. (Max and min combined by
// compare-and-swap are order-independent for ordinary values but not for NaN, which a later value
// replaces, nor for 0.0 against -0.0, which compare equal so the first one stored stays; the slots
// fix their order too.)
#include <algorithm>
#include <cstdlib>
#include <string>

#include "kernels/cuda/spmm_hub.cuh"
#include "sparseport/errors.hpp"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {

using hub::kDefaultHubThreshold;
using hub::kSmallHubThreshold;
using hub::kSmallNnz;
using hub::launch;

int64_t hub_threshold() {
  if (const char* v = std::getenv("SPARSEPORT_HUB_T"); v != nullptr && *v != '\0') {
    char* end = nullptr;
    const long long t = std::strtoll(v, &end, 10);
    if (end == v || *end != '\0' || t < 1)
      throw InvalidArgument(std::string("SPARSEPORT_HUB_T='") + v + "' is not a positive whole number of entries");
    return t;
  }
  return kDefaultHubThreshold;
}

int64_t hub_threshold_for(int64_t nnz) {
  const char* env = std::getenv("SPARSEPORT_HUB_T");
  if (env != nullptr && *env != '\0') return hub_threshold();
  return nnz <= kSmallNnz ? kSmallHubThreshold : kDefaultHubThreshold;
}

// The smallest hub threshold for A: kHubMeanMultiple x its mean row. Items pay a CTA, a shared-
// memory reduction and, split, a combine each, which only rows that unbalance the lane groups
// repay; with the regular rows taken longest first (regular_order) a row a few times the mean
// does not. On long-row graphs a fixed T makes most rows items: reddit-twin (mean degree 491), F =
// 64: 6.36 ms at T = 256, 3.85 ms at 2048, 4.15 ms at 8192, cuSPARSE 3.49 ms (H200, 2026-11-26,
// benchmarks/gpu_runs/2026-11-26/call5.sh in git history at 54a1901); at F = 256 22.6 / 21.2 / 21.7 ms. A function of A
// only, so deterministic mode keeps its bits.
namespace {
constexpr int64_t kHubMeanMultiple = 4;
int64_t mean_floor(const sparseport_csr& a) { return kHubMeanMultiple * (a.nnz / std::max<int64_t>(a.rows, 1)); }
}  // namespace

namespace {

// Whether rows that vectors cannot take go in strided columns (spmm_rows.cuh, STRIDED): float and
// 16-bit values wider than the 32 columns one pass of scalar lanes covers, unless
// SPARSEPORT_HUB_STRIDED=0 (A/B timing).
bool strided_columns(const sparseport_spmm_args& a) {
  if (a.b.cols <= 32 || a.a.value_type == SPARSEPORT_F64) return false;
  const char* knob = std::getenv("SPARSEPORT_HUB_STRIDED");
  return knob == nullptr || std::string(knob) != "0";
}

// spmm_hub_split for vectors of W values a lane along F (W = 4: float and double, 16 bytes of
// floats; W = 8: 16-bit values, 16 bytes), or single values (vec false: every type).
template <int W>
void hub_split_typed(const State& s, const sparseport_spmm_args& a, bool vec, bool deterministic) {
  if (deterministic) {
    // hub_threshold_for without SPARSEPORT_HUB_T, and one lane group per regular row: slices
    // would split a row's sum by a count that depends on the SM count, F and alignment.
    const int64_t t = std::max(a.a.nnz <= kSmallNnz ? kSmallHubThreshold : kDefaultHubThreshold, mean_floor(a.a));
    if (!vec) {
      launch<1, 32>(s, a, t, true);
      return;
    }
    switch (vecw_group(a.b.cols, W, 4)) {
      case 4: launch<W, 4>(s, a, t, true); break;
      case 8: launch<W, 8>(s, a, t, true); break;
      case 16: launch<W, 16>(s, a, t, true); break;
      default: launch<W, 32>(s, a, t, true); break;
    }
    return;
  }
  const char* knob = std::getenv("SPARSEPORT_HUB_T");
  const int64_t t = knob != nullptr && *knob != '\0' ? hub_threshold() : std::max(hub_threshold_for(a.a.nnz), mean_floor(a.a));
  if (vec) {
    const int g = vecw_group(a.b.cols, W, 4);
    // Small matrices: the regular rows' groups (m x G lanes, less than two waves of a full GPU)
    // leave the GPU idle while each group walks its row, so a row gets a team of S slices, as
    // long as the mean row keeps at least 4 entries per slice (more slices on a full GPU lost:
    // email-Enron F = 64 33.4 -> 34.6 us, copter2 28.5 -> 39.1 us with four waves, H200). A team
    // of S slices takes rows up to S x T entries (each slice's chain is no longer than a lone
    // group's at T), so rows just above T stay off the CTA items, which cost a CTA and a
    // shared-memory reduction each (bcsstk16, mean degree 59: 17.8 us against 13.0 for
    // row_warp_vec4 at F = 32 with T = 64, H200). A tiny matrix, one that leaves the GPU half
    // empty even with a whole warp per row, gets full teams whatever its mean degree: idle slices
    // cost nothing there, and the longest row decides. (16-bit values: the same choice by the
    // group width, tuned on float32 only.)
    const int64_t resident = int64_t{s.info().sms} * 2048;
    const bool small = a.a.rows * g < 2 * resident;
    const bool tiny = a.a.rows * 32 <= resident / 2;
    const int64_t mean_deg = a.a.nnz / std::max<int64_t>(a.a.rows, 1);
    if constexpr (W == 8) {
      // 16-bit values at F <= 32: 4 lanes of 8 values cover the row, so without teams a row had
      // 4 lanes where float32 gives it 32 (8 lanes x 4 slices), and chains of its whole length:
      // 13.3 us against 8.7 in float32 on cora at F = 32 (H200, 2026-11-26, values16-call4). The
      // same rule as float32's teams (the mean row keeps at least 4 entries a slice, full teams
      // on a tiny matrix), up to 8 slices of 4 lanes.
      if (g == 4 && (tiny || (small && mean_deg >= 8))) {
        if (tiny || mean_deg >= 32)
          launch<W, 4, 8>(s, a, 8 * t, false);
        else if (mean_deg >= 16)
          launch<W, 4, 4>(s, a, 4 * t, false);
        else
          launch<W, 4, 2>(s, a, 2 * t, false);
        return;
      }
    }
    if (g == 8 && (tiny || (small && mean_deg >= 16))) {
      launch<W, 8, 4>(s, a, 4 * t, false);
    } else if (small && g == 8 && mean_deg >= 8) {
      launch<W, 8, 2>(s, a, 2 * t, false);
    } else if (g == 16 && (tiny || (small && mean_deg >= 8))) {
      launch<W, 16, 2>(s, a, 2 * t, false);
    } else {
      // F >= 128 keeps whole-warp groups: two slices of 16 lanes holding two or four vectors
      // each lost to them on astro-ph (25.9 / 51.8 us against 21.6 / 35.5 at F = 128 / 256,
      // H200) and won nowhere by more than noise; eight lanes of eight vectors in four slices
      // take 170 registers a lane.
      switch (g) {
        case 4: launch<W, 4>(s, a, t, false); break;
        case 8: launch<W, 8>(s, a, t, false); break;
        case 16: launch<W, 16>(s, a, t, false); break;
        default: launch<W, 32>(s, a, t, false); break;
      }
    }
  } else if (strided_columns(a)) {
    // Rows that vectors cannot take, wider than a warp: one pass of up to 128 columns, a lane's
    // columns strided by G (spmm_rows.cuh, STRIDED), G x VEC the narrowest cover of F.
    if (a.b.cols <= 48)
      launch<3, 16, 1, true>(s, a, t, false);
    else if (a.b.cols <= 64)
      launch<2, 32, 1, true>(s, a, t, false);
    else if (a.b.cols <= 96)
      launch<3, 32, 1, true>(s, a, t, false);
    else
      launch<4, 32, 1, true>(s, a, t, false);
  } else {
    launch<1, 32>(s, a, t, false);
  }
}

}  // namespace

void spmm_hub_split(const State& s, const sparseport_spmm_args& a, bool deterministic) {
  if (is16_tag(a.a.value_type)) {
    // 16-bit values: 8 a lane in 16-byte vectors where B and C allow it (F % 8 == 0, ld % 8 == 0,
    // 16-byte aligned), else one a lane; float32 accumulation either way.
    const bool vec8 = vec16_rows(a.b.data, a.b.ld, a.b.cols, 2) && vec16_rows(a.c.data, a.c.ld, a.c.cols, 2);
    hub_split_typed<8>(s, a, vec8, deterministic);
    return;
  }
  const bool vec4 = vec4_rows(a.b.data, a.b.ld, a.b.cols) && vec4_rows(a.c.data, a.c.ld, a.c.cols);
  hub_split_typed<4>(s, a, vec4, deterministic);
}

}  // namespace sparseport::cuda
