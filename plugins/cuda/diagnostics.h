/* SPDX-License-Identifier: Apache-2.0 */
/* What the cuda plugin's context keeps across calls, for tests and tools that need to see it
 * (plan reuse, the vendor algorithm chosen, poisoning). Not part of the plugin table. */
#ifndef SPARSEPORT_CUDA_DIAGNOSTICS_H
#define SPARSEPORT_CUDA_DIAGNOSTICS_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sparseport_cuda_diagnostics {
  uint64_t plan_entries, plan_hits, plan_misses, plan_invalidated, plan_evicted;
  int32_t poisoned;
  char note[512]; /* the last spmm.cusparse plan's timings and choice, e.g. "... ALG2 0.1 ms, ALG3 0.08 ms -> ALG3" */
  /* Device memory held once the stream's queued work has run: Context::allocate's buffers not yet
   * released, and the scratch pool's memory in use (plans, formats, an op's temporaries); 0 and 0 on a
   * poisoned context. */
  uint64_t allocated_bytes, scratch_bytes;
} sparseport_cuda_diagnostics;

/* state: sparseport_exec.state of a cuda context (Context::exec().state). Returns 0 on success. */
int sparseport_cuda_get_diagnostics(void* state, sparseport_cuda_diagnostics* out);

/* The context's cudaStream_t (as void*): every op of the context runs on it, so benchmarks can
 * record CUDA events around ops on it. After set_external (ABI 1.5) lent a stream, that one. */
void* sparseport_cuda_stream(void* state);

#ifdef __cplusplus
}
#endif

#endif /* SPARSEPORT_CUDA_DIAGNOSTICS_H */
