// SPDX-License-Identifier: Apache-2.0
// Index contents checked where they live (the plugin's check_indices slot): one pass over rowptr
// and colind (or an index array), O(n) bytes read once, and one 32-byte copy back into pinned
// memory; the result words persist in the state, so the success path is one launch, one copy
// and one synchronisation (H200: the copy back from pageable memory and a per-call memset and
// scratch allocation made a check cost 43 us on a 1M-entry graph). Each thread
// records a violation with atomicMin on its position, so the report is the first violation
// whatever the launch shape; a thread stops once a violation before its next position is known
// (looked at every few elements, so the grid does not queue on one cache line).
// The details of that violation (its row, the values) are read afterwards, on the error path only.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "kernels/cuda/common.cuh"

SPARSEPORT_CUDA_MODULE(0)

namespace sparseport::cuda {
namespace {

constexpr unsigned long long kNone = ~0ull;
// A thread looks at the shared early-exit words once per this many of its elements (below).
constexpr int64_t kEarlyExitEvery = 8;

// found[0]: first row i with rowptr[i + 1] < rowptr[i]; found[1]: first entry whose column is
// outside [0, cols); found[2], found[3]: rowptr[0] and rowptr[rows] as read.
template <class I>
__global__ void __launch_bounds__(kBlock)
    csr_kernel(const I* __restrict__ rowptr, const I* __restrict__ colind, int64_t rows, int64_t nnz, int64_t cols,
               unsigned long long* found) {
  const int64_t total = rows + nnz;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (first == 0) {
    found[2] = static_cast<unsigned long long>(static_cast<int64_t>(rowptr[0]));
    found[3] = static_cast<unsigned long long>(static_cast<int64_t>(rowptr[rows]));
  }
  const volatile unsigned long long* seen = found;
  int64_t step = 0;
  for (int64_t t = first; t < total; t += stride, ++step) {
    // Stop once a violation that will be reported before this position is known: an earlier
    // decreasing row, or (for entries) any bad rowptr or an earlier bad column. Looked at every
    // kEarlyExitEvery steps only: the words are one L2 line for the whole grid, and reading them
    // at every element serialised the grid on it (21 us instead of about 2 on a 1M-entry graph).
    if (step % kEarlyExitEvery == kEarlyExitEvery - 1) {
      const unsigned long long bad_row = seen[0];
      if (t < rows ? bad_row < static_cast<unsigned long long>(t)
                   : bad_row != kNone || seen[1] < static_cast<unsigned long long>(t - rows))
        break;
    }
    if (t < rows) {
      if (__ldg(rowptr + t + 1) < __ldg(rowptr + t)) atomicMin(found, static_cast<unsigned long long>(t));
    } else {
      const int64_t e = t - rows;
      const int64_t c = static_cast<int64_t>(__ldg(colind + e));
      if (c < 0 || c >= cols) atomicMin(found + 1, static_cast<unsigned long long>(e));
    }
  }
}

// found[0] = 2e for an entry outside [0, bound), 2e + 1 for an entry smaller than the one before
// (sorted arrays only): the smallest key is the first violation, a range error before an order
// error at the same entry (as the host check reads them).
template <class I>
__global__ void __launch_bounds__(kBlock)
    index_kernel(const I* __restrict__ index, int64_t n, int64_t bound, bool sorted, unsigned long long* found) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const volatile unsigned long long* seen = found;
  int64_t step = 0;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; e < n; e += stride, ++step) {
    if (step % kEarlyExitEvery == kEarlyExitEvery - 1 && seen[0] < 2ull * static_cast<unsigned long long>(e)) break;
    const int64_t v = static_cast<int64_t>(__ldg(index + e));
    if (v < 0 || v >= bound)
      atomicMin(found, 2ull * static_cast<unsigned long long>(e));
    else if (sorted && e > 0 && v < static_cast<int64_t>(__ldg(index + e - 1)))
      atomicMin(found, 2ull * static_cast<unsigned long long>(e) + 1);
  }
}

// The row of entry e (rowptr is valid when this runs) and the column stored there.
template <class I>
__global__ void locate_kernel(const I* rowptr, const I* colind, int64_t rows, int64_t e, int64_t* out) {
  out[0] = row_of(rowptr, rows, e);
  out[1] = static_cast<int64_t>(colind[e]);
}

template <class I>
int64_t read_one(const State& s, const I* p) {
  I v{};
  check(cudaMemcpyAsync(&v, p, sizeof(I), cudaMemcpyDeviceToHost, s.stream()), "cudaMemcpyAsync (index check)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (index check)");
  return static_cast<int64_t>(v);
}

// Enough blocks to keep every SM's loads in flight; the grid-stride loop covers the rest.
unsigned check_blocks(const State& s, int64_t items) {
  const int64_t cap = int64_t{32} * (s.info().sms > 0 ? s.info().sms : 1);
  const int64_t b = ceil_div(items, kBlock);
  return static_cast<unsigned>(b < 1 ? 1 : (b > cap ? cap : b));
}

// Runs `launch` on the state's persistent result words and reads them back (one 32-byte copy into
// pinned memory, one synchronisation); the words are put back to all ones only after a violation.
template <class Launch>
void run_check(const State& s, unsigned long long (&h)[4], Launch&& launch) {
  const auto [dev, host] = s.check_words();
  launch(dev);
  check(cudaMemcpyAsync(host, dev, sizeof h, cudaMemcpyDeviceToHost, s.stream()), "cudaMemcpyAsync (index check)");
  check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (index check)");
  std::copy(host, host + 4, h);
  if (h[0] != kNone || h[1] != kNone)
    check(cudaMemsetAsync(dev, 0xff, 2 * sizeof(unsigned long long), s.stream()), "cudaMemsetAsync (index check)");
}

template <class I>
sparseport_index_report check_csr(const State& s, const sparseport_csr& a) {
  const auto* rowptr = static_cast<const I*>(a.rowptr);
  const auto* colind = static_cast<const I*>(a.colind);
  unsigned long long h[4];
  run_check(s, h, [&](unsigned long long* found) {
    csr_kernel<I><<<check_blocks(s, a.rows + a.nnz), kBlock, 0, s.stream()>>>(rowptr, colind, a.rows, a.nnz, a.cols,
                                                                           found);
    check_launch("index check (CSR)");
  });

  sparseport_index_report r{};
  const auto start = static_cast<int64_t>(h[2]), end = static_cast<int64_t>(h[3]);
  if (start != 0) {
    r.problem = SPARSEPORT_INDEX_ROWPTR_START;
    r.value = start;
  } else if (end != a.nnz) {
    r.problem = SPARSEPORT_INDEX_ROWPTR_END;
    r.position = r.row = a.rows;
    r.value = end;
  } else if (h[0] != kNone) {
    r.problem = SPARSEPORT_INDEX_ROWPTR_DECREASES;
    r.position = r.row = static_cast<int64_t>(h[0]);
    r.value = read_one(s, rowptr + r.row);
    r.value2 = read_one(s, rowptr + r.row + 1);
  } else if (h[1] != kNone) {
    r.problem = SPARSEPORT_INDEX_OUT_OF_RANGE;
    r.position = static_cast<int64_t>(h[1]);
    Scratch where(s, 2 * sizeof(int64_t));
    locate_kernel<I><<<1, 1, 0, s.stream()>>>(rowptr, colind, a.rows, r.position, where.as<int64_t>());
    check_launch("index check (locate)");
    int64_t rc[2];
    check(cudaMemcpyAsync(rc, where.get(), sizeof rc, cudaMemcpyDeviceToHost, s.stream()), "cudaMemcpyAsync (index check)");
    check(cudaStreamSynchronize(s.stream()), "cudaStreamSynchronize (index check)");
    r.row = rc[0];
    r.value = rc[1];
  }
  return r;
}

template <class I>
sparseport_index_report check_index(const State& s, const sparseport_index_array& idx, int64_t bound, bool sorted) {
  const auto* p = static_cast<const I*>(idx.data);
  unsigned long long h[4];
  run_check(s, h, [&](unsigned long long* found) {
    index_kernel<I><<<check_blocks(s, idx.n), kBlock, 0, s.stream()>>>(p, idx.n, bound, sorted, found);
    check_launch("index check");
  });
  const unsigned long long key = h[0];

  sparseport_index_report r{};
  if (key == kNone) return r;
  r.position = static_cast<int64_t>(key / 2);
  if (key % 2 == 0) {
    r.problem = SPARSEPORT_INDEX_OUT_OF_RANGE;
    r.value = read_one(s, p + r.position);
  } else {
    r.problem = SPARSEPORT_INDEX_UNSORTED;
    r.value = read_one(s, p + r.position - 1);
    r.value2 = read_one(s, p + r.position);
  }
  return r;
}

}  // namespace

sparseport_index_report check_indices(const State& s, const sparseport_index_check& c) {
  sparseport_index_report r{};
  if (c.kind == SPARSEPORT_CHECK_CSR) {
    dispatch_index(c.csr.index_type, [&](auto i) { r = check_csr<decltype(i)>(s, c.csr); });
  } else {
    if (c.index.n <= 0) return r;
    dispatch_index(c.index.index_type, [&](auto i) {
      r = check_index<decltype(i)>(s, c.index, c.bound, c.kind == SPARSEPORT_CHECK_SORTED_INDEX);
    });
  }
  return r;
}

}  // namespace sparseport::cuda
