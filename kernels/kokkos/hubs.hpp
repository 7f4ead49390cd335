// SPDX-License-Identifier: Apache-2.0
// The hub list of the kokkos ops that split long rows (spmm.hub_split, csr_attention.onepass on a
// device): rows of more than T entries cut into chunks of at most T, numbered so that a work item
// finds its row and entries with one binary search. It depends only on rowptr and T, so it is a plan,
// built once (two scans, their totals read back) and kept in the backend's plan cache
// (backends/kokkos/runtime.hpp). Plans are keyed by rowptr's address and the shape; host memory can
// be rewritten without the backend seeing it, so chunk_of checks the plan against the rowptr it reads
// and a stale plan costs balance, never correctness.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/kokkos/runtime.hpp"
#include "kernels/kokkos/common.hpp"
#include "kernels/row_order.hpp"

namespace sparseport::kokkos {

// The hubs: rows of more than T entries, in row order (rows), and their extra chunks numbered
// from 0 (off: hub h's chunks 1.. are the extra chunks [off[h], off[h + 1]); chunk 0 goes with its
// row). Execution-space memory, held by a HubPlan.
struct Hubs {
  int64_t count = 0, extra = 0;
  const int64_t* rows = nullptr;
  const int64_t* off = nullptr;
};

struct HubPlan : Plan {
  Kokkos::View<int64_t*, MemSpace> rows, off;
  Hubs hubs;
  // With with_order: every row once, the rows of at most T entries longest first within windows of
  // consecutive rows, then the hubs (kernels/row_order.hpp, every_row_order); empty where that
  // order would not even out the rows that run side by side (then row i is taken i-th).
  Kokkos::View<int64_t*, MemSpace> order;
};

// The plan's build: two scans whose totals come back to the host (the only synchronisations of the
// ops that split hubs, once per plan). `op` names the kernels and buffers (Kokkos's tools).
// with_order: also the row order of the whole rows (spmm.hub_split on a device space, where a warp
// holds several rows side by side and waits for the longest; the cuda plugin's plan has the same),
// from a host copy of rowptr, sorted and copied back, also once per plan.
template <class I>
std::shared_ptr<HubPlan> build_hubs(const std::string& op, const I* rp, int64_t m, int64_t nnz, int64_t t,
                                    bool with_order) {
  auto plan = std::make_shared<HubPlan>();
  plan->watch(rp, static_cast<size_t>(m + 1) * sizeof(I));
  if (with_order && m > 0) {
    const Kokkos::View<const I*, MemSpace, Kokkos::MemoryUnmanaged> device_rp(rp, static_cast<size_t>(m + 1));
    const auto host_rp = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), device_rp);
    const std::vector<int64_t> order =
        row_order::every_row_order(std::vector<I>(host_rp.data(), host_rp.data() + m + 1), t);
    if (!order.empty()) {
      plan->order = Kokkos::View<int64_t*, MemSpace>(
          Kokkos::view_alloc(Kokkos::WithoutInitializing, "sparseport::kokkos::" + op + ".row_order"), order.size());
      Kokkos::deep_copy(plan->order,
                        Kokkos::View<const int64_t*, Kokkos::HostSpace, Kokkos::MemoryUnmanaged>(order.data(), order.size()));
    }
  }
  // At most nnz / (T + 1) rows hold more than T entries.
  const int64_t cap = std::min(m, nnz / (t + 1));
  if (cap == 0) return plan;
  plan->rows = Kokkos::View<int64_t*, MemSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "sparseport::kokkos::" + op + ".hub_rows"), cap);
  int64_t* rows = plan->rows.data();
  int64_t count = 0;
  Kokkos::parallel_scan(
      "sparseport::kokkos::" + op + ".hubs", Range(0, m),
      KOKKOS_LAMBDA(const int64_t i, int64_t& n, const bool final) {
        if (static_cast<int64_t>(rp[i + 1]) - static_cast<int64_t>(rp[i]) > t) {
          if (final) rows[n] = i;
          n += 1;
        }
      },
      count);
  if (count == 0) {
    plan->rows = {};
    return plan;
  }
  plan->off = Kokkos::View<int64_t*, MemSpace>(
      Kokkos::view_alloc(Kokkos::WithoutInitializing, "sparseport::kokkos::" + op + ".hub_off"), count + 1);
  int64_t* off = plan->off.data();
  int64_t extra = 0;
  Kokkos::parallel_scan(
      "sparseport::kokkos::" + op + ".chunks", Range(0, count),
      KOKKOS_LAMBDA(const int64_t h, int64_t& n, const bool final) {
        const int64_t i = rows[h];
        const int64_t deg = static_cast<int64_t>(rp[i + 1]) - static_cast<int64_t>(rp[i]);
        const int64_t more = (deg + t - 1) / t - 1;
        if (final) {
          off[h] = n;
          if (h + 1 == count) off[count] = n + more;
        }
        n += more;
      },
      extra);
  Kokkos::fence();
  plan->hubs = {count, extra, rows, off};
  return plan;
}

// The plan of op (its variant's name) for this rowptr and T, from the backend's plan cache.
template <class I>
std::shared_ptr<HubPlan> hub_plan(const std::string& op, const I* rp, int64_t m, int64_t nnz, int64_t t,
                                  bool with_order = false) {
  const std::string key = op + "|" + std::to_string(reinterpret_cast<uintptr_t>(rp)) + "|" +
                          std::to_string(m) + "|" + std::to_string(nnz) + "|" + std::to_string(sizeof(I)) + "|" +
                          std::to_string(t) + (with_order ? "|order" : "");
  auto plan = std::static_pointer_cast<HubPlan>(plans().find(key));
  if (plan == nullptr) {
    plan = build_hubs(op, rp, m, nnz, t, with_order);
    plans().insert(key, plan);
  }
  return plan;
}

// Where a chunk goes: its row, its entries [eb, ee), and the hub whose scratch row it joins (-1: a
// whole row, written to C directly), and the chunk's place among its hub's (k: 0 for the row's
// first chunk). eb == ee with hub >= 0: nothing to add (a stale plan's chunk).
struct Chunk {
  int64_t row, eb, ee, hub, k;
};

// Work item x < hubs.extra: an extra chunk of a hub. Else row x - hubs.extra with its first chunk.
// Hub chunks come first so that the longest work starts first. The checks against the rowptr read
// here make a stale plan cost balance, never correctness: a planned hub that is no longer above T is
// written whole by its row's item (its extra chunks are empty), a row above T that the plan does not
// list is written whole by one item, and a hub's last planned chunk runs to the row's end however
// long the row has grown.
template <class I>
KOKKOS_INLINE_FUNCTION Chunk chunk_of(const I* rp, const Hubs& h, int64_t t, int64_t x) {
  Chunk c;
  if (x < h.extra) {
    c.hub = lower_bound(h.off, h.count + 1, x + 1) - 1;  // the last hub whose first extra chunk is <= x
    c.row = h.rows[c.hub];
    c.k = x - h.off[c.hub] + 1;
    const int64_t k = c.k;
    const bool last = x + 1 == h.off[c.hub + 1];
    const int64_t begin = static_cast<int64_t>(rp[c.row]), end = static_cast<int64_t>(rp[c.row + 1]);
    if (end - begin <= t) {  // no longer a hub: its row's item writes it whole
      c.eb = c.ee = begin;
      return c;
    }
    c.eb = begin + k * t < end ? begin + k * t : end;
    c.ee = last || c.eb + t > end ? end : c.eb + t;
  } else {
    c.row = x - h.extra;
    const int64_t begin = static_cast<int64_t>(rp[c.row]), end = static_cast<int64_t>(rp[c.row + 1]);
    c.eb = begin;
    c.ee = end;
    c.hub = -1;
    c.k = 0;
    if (end - begin > t) {
      const int64_t hub = lower_bound(h.rows, h.count, c.row);
      if (hub < h.count && h.rows[hub] == c.row) {
        c.hub = hub;
        c.ee = begin + t;
      }
    }
  }
  return c;
}

// The hubs' items alone, for kernels that give whole rows to other workers: item x < hubs.extra is
// an extra chunk (as chunk_of), item hubs.extra + h is hub h's first chunk. A first chunk whose row
// is no longer above T (a stale plan) has nothing to do: row -1, and the row's own worker writes it
// whole, as chunk_of's row items do.
template <class I>
KOKKOS_INLINE_FUNCTION Chunk hub_chunk_of(const I* rp, const Hubs& h, int64_t t, int64_t x) {
  if (x < h.extra) return chunk_of(rp, h, t, x);
  Chunk c;
  c.hub = x - h.extra;
  c.row = h.rows[c.hub];
  c.k = 0;
  const int64_t begin = static_cast<int64_t>(rp[c.row]), end = static_cast<int64_t>(rp[c.row + 1]);
  c.eb = begin;
  c.ee = begin + t;
  if (end - begin <= t) c.row = -1;
  return c;
}

// Whether row i, of `count` entries, is a listed hub (its chunks are hub items): rows up to T never
// are, so the binary search runs only on long rows.
KOKKOS_INLINE_FUNCTION bool listed_hub(const Hubs& h, int64_t t, int64_t i, int64_t count) {
  if (count <= t || h.count == 0) return false;
  const int64_t hub = lower_bound(h.rows, h.count, i);
  return hub < h.count && h.rows[hub] == i;
}

}  // namespace sparseport::kokkos
