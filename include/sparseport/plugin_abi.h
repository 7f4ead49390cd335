/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The plugin ABI: one plain-C table of function pointers per backend.
 *
 * Rules (append-only, versioned):
 *  - Fields are only ever appended. A plugin fills `abi_version` and `table_size`; the loader
 *    refuses a table whose major version differs, and treats slots beyond `table_size` as null.
 *  - No C++ type and no exception crosses this boundary. A slot returns 0 on success, or a
 *    sparseport_error_code and a whole-sentence message in *status.
 *  - A null op slot means "not provided": the front end raises Unsupported.
 *  - Every op slot receives the variant name (for example "spmm.rows"), already checked by the
 *    front end to be one the plugin lists for that op and that applies to the arguments.
 *  - All pointers in the argument structs live in the plugin's memory space (host or device).
 */
#ifndef SPARSEPORT_PLUGIN_ABI_H
#define SPARSEPORT_PLUGIN_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SPARSEPORT_ABI_VERSION_MAJOR 1
#define SPARSEPORT_ABI_VERSION_MINOR 10
#define SPARSEPORT_ABI_VERSION ((SPARSEPORT_ABI_VERSION_MAJOR << 16) | SPARSEPORT_ABI_VERSION_MINOR)

/* ABI 1.7: F16 (IEEE binary16) and BF16 (bfloat16), 16-bit storage with float32 arithmetic. Only
 * variants flagged SPARSEPORT_VARIANT_VALUES16 receive them; the front end converts 16-bit operands
 * to float32 for every other variant (see the convert slot), so a plugin built against 1.6 never
 * meets a 16-bit tag. */
typedef enum sparseport_value_type {
  SPARSEPORT_F32 = 1,
  SPARSEPORT_F64 = 2,
  SPARSEPORT_F16 = 3,
  SPARSEPORT_BF16 = 4
} sparseport_value_type;
/* Bytes per value of a sparseport_value_type tag. */
static inline int64_t sparseport_value_size(int32_t t) { return t == SPARSEPORT_F64 ? 8 : t == SPARSEPORT_F32 ? 4 : 2; }
typedef enum sparseport_index_type { SPARSEPORT_I32 = 1, SPARSEPORT_I64 = 2 } sparseport_index_type;
typedef enum sparseport_reduce {
  SPARSEPORT_REDUCE_SUM = 0,
  SPARSEPORT_REDUCE_MEAN = 1,
  SPARSEPORT_REDUCE_MAX = 2,
  SPARSEPORT_REDUCE_MIN = 3
} sparseport_reduce;

/* One id per operator of DESIGN.md section 1 (the dense-row form of csr_slice_rows has its own). */
typedef enum sparseport_op {
  SPARSEPORT_OP_SPMM = 0,
  SPARSEPORT_OP_SDDMM = 1,
  SPARSEPORT_OP_SEGMENT_REDUCE = 2,
  SPARSEPORT_OP_SCATTER_REDUCE = 3,
  SPARSEPORT_OP_GATHER_SCATTER = 4,
  SPARSEPORT_OP_CSR_ATTENTION = 5,
  SPARSEPORT_OP_CSR_SLICE_ROWS = 6,
  SPARSEPORT_OP_CSR_SLICE_ROWS_DENSE = 7,
  SPARSEPORT_OP_CSR_INDUCED_SUBGRAPH = 8,
  SPARSEPORT_OP_CSR_TRANSPOSE = 9,
  SPARSEPORT_OP_COUNT = 10
} sparseport_op;

typedef enum sparseport_error_code {
  SPARSEPORT_OK = 0,
  SPARSEPORT_ERR_INVALID_ARGUMENT = 1,
  SPARSEPORT_ERR_DIMENSION_MISMATCH = 2,
  SPARSEPORT_ERR_UNSUPPORTED = 3,
  SPARSEPORT_ERR_BACKEND = 4,
  SPARSEPORT_ERR_DEVICE_FAULT = 5,
  SPARSEPORT_ERR_PLUGIN = 6
} sparseport_error_code;

typedef struct sparseport_status {
  int32_t code;            /* sparseport_error_code */
  int32_t native_code;     /* backend's own code (cudaError_t, ...) for BACKEND/DEVICE_FAULT */
  char native_name[64];    /* its name, e.g. "cudaErrorIllegalAddress" */
  char message[1024];      /* a whole sentence */
} sparseport_status;

typedef enum sparseport_memory_space { SPARSEPORT_MEMORY_HOST = 0, SPARSEPORT_MEMORY_DEVICE = 1 } sparseport_memory_space;
typedef enum sparseport_copy_kind {
  SPARSEPORT_COPY_HOST_TO_DEVICE = 0,
  SPARSEPORT_COPY_DEVICE_TO_HOST = 1,
  SPARSEPORT_COPY_DEVICE_TO_DEVICE = 2
} sparseport_copy_kind;

/* Data descriptors. `values == NULL` in a CSR/COO means a pattern (every value is 1);
 * value_type then still names the type of the op's dense operands. */
typedef struct sparseport_csr {
  int64_t rows, cols, nnz;
  const void* rowptr; /* rows + 1 entries */
  const void* colind; /* nnz entries */
  const void* values; /* nnz entries or NULL */
  int32_t index_type, value_type;
} sparseport_csr;

typedef struct sparseport_csr_mut {
  int64_t rows, cols, nnz;
  void* rowptr;
  void* colind;
  void* values; /* NULL when the input was a pattern */
  int32_t index_type, value_type;
} sparseport_csr_mut;

typedef struct sparseport_coo {
  int64_t rows, cols, nnz;
  const void* row;
  const void* col;
  const void* values; /* nnz entries or NULL */
  int32_t index_type, value_type;
} sparseport_coo;

typedef struct sparseport_index_array {
  int64_t n;
  const void* data;
  int32_t index_type;
} sparseport_index_array;

/* Row-major dense matrix with leading dimension ld >= cols. */
typedef struct sparseport_dense {
  int64_t rows, cols, ld;
  const void* data;
  int32_t value_type;
} sparseport_dense;

typedef struct sparseport_dense_mut {
  int64_t rows, cols, ld;
  void* data;
  int32_t value_type;
} sparseport_dense_mut;

/* Execution: the plugin's per-context state (stream, handles), the thread count (0 = default) and,
 * from ABI 1.2, SPARSEPORT_EXEC_* flags (a plugin built against 1.1 never reads them). */
enum {
  SPARSEPORT_EXEC_DETERMINISTIC = 1, /* bitwise-identical results run to run, any launch shape */
  SPARSEPORT_EXEC_ALLOW_TF32 = 2     /* ABI 1.8: the caller allows float32 inputs rounded to TF32 */
};
typedef struct sparseport_exec {
  void* state;
  int32_t threads;
  int32_t flags;
} sparseport_exec;

/* Argument structs, one per op. Shapes are already checked by the front end. */
typedef struct sparseport_spmm_args {
  sparseport_csr a;       /* m x k */
  sparseport_dense b;     /* k x F */
  sparseport_dense_mut c; /* m x F */
  int32_t reduce;         /* sparseport_reduce */
  double alpha, beta;     /* C = alpha * reduce(...) + beta * C; beta == 0 ignores C's old contents */
  /* ABI 1.5, reduce max/min only: where non-null, arg[i * arg_ld + f] (A's index type, m x F) gets
   * the position in A of the entry that won C[i,f]: the first in row i's storage order whose product
   * A[i,j] * B[j,f] equals the row's max (min), the first NaN product where there is one; -1 for a
   * row without entries. Only variants flagged SPARSEPORT_VARIANT_RECORDS_ARG receive a non-null
   * arg (the front end sees to it), so a plugin built against 1.4 never meets one. */
  void* arg;
  int64_t arg_ld;
} sparseport_spmm_args;

/* ABI 1.5: the gradients of spmm max/min given the forward's arg (plugin slot spmm_arg_backward).
 *   db[j,:]   = sum over (i, f) with col(arg[i,f]) == j of dC[i,f] * A.val[arg[i,f]]   (k x F, overwritten)
 *   dvalues[e] = sum over f with arg[row(e),f] == e of dC[row(e),f] * B[col(e),f]        (nnz x 1, overwritten)
 * Either output may be absent (data NULL). at_rowptr/at_colind/at_perm, when non-null, describe
 * A^T (k x m, as csr_transpose gives it) and the position in A of each of its entries; with them
 * a plugin can gather dB row by row without atomics (deterministic), without them it scatters. */
typedef struct sparseport_spmm_arg_backward_args {
  sparseport_csr a;           /* m x k, the forward's A (values or a pattern) */
  sparseport_dense b;         /* k x F, the forward's B (needed for dvalues only) */
  sparseport_dense dc;        /* m x F */
  const void* arg;            /* m x F, A's index type, as the forward wrote it */
  int64_t arg_ld;
  sparseport_dense_mut db;      /* k x F or data NULL */
  sparseport_dense_mut dvalues; /* nnz x 1 or data NULL */
  const void* at_rowptr;      /* k + 1 entries or NULL */
  const void* at_colind;      /* nnz entries: the row of A of each A^T entry */
  const void* at_perm;        /* nnz entries: the position in A of each A^T entry */
} sparseport_spmm_arg_backward_args;

/* ABI 1.6: the row softmax of csr_attention_backward's weights (plugin slot csr_softmax), computed
 * where the scores live. For every row i of a, each of its scores[e] becomes
 *   exp(s[e] - top) / (sum over the row's entries t of exp(s[t] - top)),   s[e] = scale * scores[e],
 * top = the largest s of the row, with the arithmetic of the plugin's csr_attention forward: scale
 * and s in the value type, and the rest in the value type too (the reference, the oracle, keeps
 * the front end's host pass: the rest in double). Non-finite scores do what they do in the
 * forward: a NaN score, or a row whose scores are all -inf or include +inf, makes every weight of
 * the row NaN; a -inf score among finite ones gets weight 0. Rows without entries are untouched. */
typedef struct sparseport_csr_softmax_args {
  sparseport_csr a; /* the pattern: rowptr used (colind and values not read); a.value_type is scores' */
  void* scores;     /* a.nnz values in A's order, overwritten in place by the weights */
  double scale;     /* finite; applied in the value type, as the forward applies it */
} sparseport_csr_softmax_args;

typedef struct sparseport_sddmm_args {
  sparseport_csr a;         /* m x k */
  sparseport_dense x;       /* m x F */
  sparseport_dense y;       /* k x F */
  sparseport_dense_mut out; /* nnz x 1 */
} sparseport_sddmm_args;

/* segment_reduce (index sorted ascending) and scatter_reduce (any order). */
typedef struct sparseport_segment_args {
  sparseport_index_array index; /* E entries in [0, out.rows) */
  sparseport_dense src;         /* E x F */
  sparseport_dense_mut out;     /* N x F, overwritten; empty segments get 0 */
  int32_t reduce;
} sparseport_segment_args;

typedef struct sparseport_gather_scatter_args {
  sparseport_coo edges;     /* row = dst (sorted ascending), col = src, values = weights or NULL */
  sparseport_dense x;       /* edges.cols x F */
  sparseport_dense_mut out; /* edges.rows x F, overwritten; rows without edges get 0 */
  int32_t reduce;
} sparseport_gather_scatter_args;

typedef struct sparseport_attention_args {
  sparseport_csr a;         /* m x k; its values are ignored (the pattern selects keys) */
  sparseport_dense q;       /* m x F */
  sparseport_dense k;       /* k x F */
  sparseport_dense v;       /* k x Fv */
  sparseport_dense_mut out; /* m x Fv, overwritten; empty rows get 0 */
  double scale;
} sparseport_attention_args;

/* Two phases for structural ops whose output size the caller cannot know:
 * phase 0 writes out.rowptr (out.rows + 1 entries, out.rowptr[0] = 0);
 * phase 1, after the caller allocated out.colind/out.values of out.nnz = rowptr[out.rows], fills them. */
typedef struct sparseport_slice_rows_args {
  sparseport_csr a;
  sparseport_index_array rows; /* s entries in [0, a.rows), any order, repeats allowed */
  int32_t phase;
  sparseport_csr_mut out;      /* s x a.cols */
} sparseport_slice_rows_args;

typedef struct sparseport_slice_rows_dense_args {
  sparseport_csr a;
  sparseport_index_array rows;
  sparseport_dense_mut out; /* s x a.cols: zeroed, then out[t, col] += val (duplicates add up) */
} sparseport_slice_rows_dense_args;

typedef struct sparseport_induced_subgraph_args {
  sparseport_csr a;                /* square */
  sparseport_index_array vertices; /* s distinct entries in [0, a.rows) */
  int32_t phase;
  sparseport_csr_mut out;          /* s x s, column t means vertices[t] */
} sparseport_induced_subgraph_args;

typedef struct sparseport_transpose_args {
  sparseport_csr a;       /* m x k */
  sparseport_csr_mut out; /* k x m with a.nnz entries, all buffers allocated by the caller */
  /* ABI 1.5: where non-null (a.nnz entries of A's index type), perm[t] = the position in A of the
   * entry that became out entry t, so values and gradients move between the two orders by a
   * gather. Only passed to a plugin whose table says 1.5 or later. */
  void* perm;
} sparseport_transpose_args;

/* VENDOR: the vendor library's kernel, the guardrail's reference. Several variants of an op may be
 * flagged: the reference for an input is the first listed that applies to it, so a plugin lists a
 * specialised one (e.g. cusparseSpMV, F == 1) before its general one (cusparseSpMM). */
/* DETERMINISTIC (ABI 1.2): the variant gives bitwise-identical results run to run and for any
 * launch configuration or thread count on the same device; deterministic mode offers only these. */
/* RECORDS_ARG (ABI 1.5, spmm): the variant writes sparseport_spmm_args.arg for max/min when asked. */
/* VALUES16 (ABI 1.7): the variant takes F16 and BF16 values itself (16-bit loads and stores,
 * float32 accumulation, one rounding per stored result). Without it, 16-bit calls reach the
 * variant through the front end's float32 conversion. */
/* TF32 (ABI 1.8): the variant rounds float32 inputs to TF32 (10 mantissa bits, tensor cores) and
 * accumulates in float32; it is offered only where the caller allows it (SPARSEPORT_EXEC_ALLOW_TF32). */
enum {
  SPARSEPORT_VARIANT_DEFAULT = 1u,
  SPARSEPORT_VARIANT_VENDOR = 2u,
  SPARSEPORT_VARIANT_DETERMINISTIC = 4u,
  SPARSEPORT_VARIANT_RECORDS_ARG = 8u,
  SPARSEPORT_VARIANT_VALUES16 = 16u,
  SPARSEPORT_VARIANT_TF32 = 32u
};

/* ABI 1.2: index contents checked where they live (device memory). One check per call. */
typedef enum sparseport_index_check_kind {
  SPARSEPORT_CHECK_CSR = 0,          /* csr: rowptr[0] == 0, monotone, rowptr[rows] == nnz, columns in [0, cols) */
  SPARSEPORT_CHECK_INDEX = 1,        /* index: every entry in [0, bound) */
  SPARSEPORT_CHECK_SORTED_INDEX = 2  /* index: in [0, bound) and ascending */
} sparseport_index_check_kind;

typedef struct sparseport_index_check {
  int32_t kind;                 /* sparseport_index_check_kind */
  sparseport_csr csr;           /* kind CSR (values unused) */
  sparseport_index_array index; /* kinds INDEX and SORTED_INDEX */
  int64_t bound;                /* kinds INDEX and SORTED_INDEX */
  const char* op;               /* for messages: the op ("spmm") and the argument ("A", "index") */
  const char* arg;
} sparseport_index_check;

/* The first violation found: the smallest row (rowptr problems) or position (entries). */
typedef enum sparseport_index_problem {
  SPARSEPORT_INDEX_OK = 0,
  SPARSEPORT_INDEX_ROWPTR_START = 1,  /* rowptr[0] != 0: value = rowptr[0] */
  SPARSEPORT_INDEX_ROWPTR_END = 2,    /* rowptr[rows] != nnz: value = rowptr[rows] */
  SPARSEPORT_INDEX_ROWPTR_DECREASES = 3, /* position = row i, value = rowptr[i], value2 = rowptr[i+1] */
  SPARSEPORT_INDEX_OUT_OF_RANGE = 4,  /* position = entry, value = the index; for CSR row = its row */
  SPARSEPORT_INDEX_UNSORTED = 5       /* position = entry e, value = index[e-1], value2 = index[e] */
} sparseport_index_problem;

typedef struct sparseport_index_report {
  int32_t problem; /* sparseport_index_problem */
  int64_t position, row, value, value2;
} sparseport_index_report;

/* ABI 1.3: what the scheduler reads of a CSR operand, computed where it lives (one pass on the
 * device for device memory, no copy of the arrays). The host computes the same numbers bit for bit
 * (scheduler/summary.cpp is the definition); a plugin's result must equal it.
 *   want SIGNATURE: rows, cols, nnz, rowptr_hash and colind_hash (each over a sample of its array,
 *                   entries widened to 64 bits; below).
 *   want FEATURES:  also the histograms, max_degree, the distance sum and the block counts.
 * Hashes: of an array v of n entries (rowptr: n = rows + 1; colind: n = nnz), the S =
 * min(n, SPARSEPORT_SUMMARY_SAMPLE) entries at positions p_j, j < S: every entry (p_j = j) when
 * n <= S; else R = S / L runs of L = SPARSEPORT_SUMMARY_RUN consecutive entries, run r starting at
 * (r * (n - L)) / (R - 1), so p_j = ((j / L) * (n - L)) / (R - 1) + j % L: the first and the last
 * entry always.
 * h = sum over j of mix64(v_p ^ (p * 0x9E3779B97F4A7C15)), p = p_j, modulo 2^64 (order-free, so a
 * grid sums it in any order), then mix64(h + S); mix64 is SplitMix64's finaliser. Since issue 35
 * rowptr is sampled too (it was hashed whole, and colind sampled at (j * nnz) / S, S <= 16384;
 * the numbers' one consumer is the decision cache's key): a cache hit in a new process must cost
 * <= 50 us, and reading all of rowptr took 2.5 ms on a 1M-row matrix (scheduler/summary.cpp,
 * sample_hash, has the numbers). The samples come in runs (they were S single entries, evenly
 * spaced, until issue 35's second pass) because a cold entry costs its page and its line, not
 * its bytes. So matrices of the same rows, cols and nnz whose rowptr and colind agree at the
 * sampled positions share a signature (a performance decision, never a result). For n <= S the
 * hashes are the old ones.
 * Blocks: the 32-row blocks b = (j * nblocks) / B for j < B = min(nblocks, SPARSEPORT_SUMMARY_BLOCKS),
 * nblocks = ceil(rows / 32); a block's first SPARSEPORT_SUMMARY_BLOCK_CAP entries (in storage order)
 * are counted.
 *   want CHECK (ABI 1.4): also checks the index contents in the same pass, as check_indices does
 *                   for a CSR, and sets index_checked = 1 and index_problem (0: valid). A plan's
 *                   construction asks for the signature anyway; the check then costs the bytes it
 *                   reads only, not a launch and a synchronisation of its own. The details of
 *                   a violation come from check_indices. A plugin that cannot check leaves
 *                   index_checked = 0 and the caller checks separately. With an invalid rowptr the
 *                   SIGNATURE numbers are still defined; FEATURES must not be asked before a
 *                   check passed.
 *   want DEGREES (ABI 1.9): max_degree and degree_hist, as FEATURES computes them, from the pass
 *                   over rowptr alone; the other FEATURES fields are unspecified (a plugin may
 *                   compute all of FEATURES instead). What a shape class reads (the scheduler's
 *                   class decision for a matrix the cache has never seen), without FEATURES's pass
 *                   over every entry and its sorted blocks (on an H100, a sampled subgraph of 50k
 *                   entries: 13 against 21 us of GPU time). Asked only of a plugin built against
 *                   ABI 1.9 or later; like FEATURES, only after a check passed. */
#define SPARSEPORT_SUMMARY_SIGNATURE 1u
#define SPARSEPORT_SUMMARY_FEATURES 2u
#define SPARSEPORT_SUMMARY_CHECK 4u
#define SPARSEPORT_SUMMARY_DEGREES 8u
#define SPARSEPORT_SUMMARY_BUCKETS 40
#define SPARSEPORT_SUMMARY_SAMPLE 128
#define SPARSEPORT_SUMMARY_RUN 16
#define SPARSEPORT_SUMMARY_BLOCKS 2048
#define SPARSEPORT_SUMMARY_BLOCK_CAP 1024

typedef struct sparseport_csr_summary {
  int64_t rows, cols, nnz;
  uint64_t rowptr_hash, colind_hash;
  int64_t max_degree;
  /* rows whose degree d has bit_width(d) == b (b = 0: empty rows; 1: d = 1; 2: 2-3; ...) */
  int64_t degree_hist[SPARSEPORT_SUMMARY_BUCKETS];
  /* entries whose |col - diag(row)| = x has bit_width(x) == b, diag(row) = floor(row * cols / rows) */
  int64_t distance_hist[SPARSEPORT_SUMMARY_BUCKETS];
  /* sum over entries of floor(|col - diag(row)| * 2^20 / cols): the mean normalised distance, in 2^-20 */
  uint64_t distance_sum;
  /* over the sampled blocks: entries counted, distinct columns among them, and distinct 32-column
   * segments (col / 32: 128 bytes of a 4-byte B at F = 1) among them */
  int64_t block_entries, block_distinct, block_segments, blocks;
  /* ABI 1.4, with want CHECK: whether the plugin checked, and the sparseport_index_problem found */
  int32_t index_checked, index_problem;
} sparseport_csr_summary;

/* ABI 1.5: what a caller that owns the device's streams and memory (PyTorch, a Kokkos code, a
 * solver with its own pool) lends a context. stream: the queue every op, copy and scratch
 * allocation of the context is ordered on from now on (cudaStream_t for cuda; NULL: the plugin's
 * own). alloc/release: scratch memory, stream-ordered on `stream` (NULL: the plugin's own pool);
 * alloc returns NULL when it cannot. The plugin keeps no pointer from the caller beyond the
 * context's life, and frees every scratch block it took before the call that used it returns
 * (ordered on the stream), so a caller's caching allocator may reuse blocks in stream order. */
typedef struct sparseport_external {
  void* stream;
  void* (*alloc)(void* user, size_t bytes, void* stream);
  void (*release)(void* user, void* ptr, size_t bytes, void* stream);
  void* user;
} sparseport_external;

typedef struct sparseport_variant {
  int32_t op;        /* sparseport_op */
  const char* name;  /* stable, "op.variant": logs, cache, CLI and benchmarks use it */
  uint32_t flags;    /* SPARSEPORT_VARIANT_* */
  const char* doc;   /* one line: what it is and when it applies */
} sparseport_variant;

typedef int (*sparseport_spmm_fn)(const sparseport_exec*, const char* variant, const sparseport_spmm_args*, sparseport_status*);
typedef int (*sparseport_sddmm_fn)(const sparseport_exec*, const char* variant, const sparseport_sddmm_args*, sparseport_status*);
typedef int (*sparseport_segment_fn)(const sparseport_exec*, const char* variant, const sparseport_segment_args*, sparseport_status*);
typedef int (*sparseport_gather_scatter_fn)(const sparseport_exec*, const char* variant, const sparseport_gather_scatter_args*, sparseport_status*);
typedef int (*sparseport_attention_fn)(const sparseport_exec*, const char* variant, const sparseport_attention_args*, sparseport_status*);
typedef int (*sparseport_slice_rows_fn)(const sparseport_exec*, const char* variant, const sparseport_slice_rows_args*, sparseport_status*);
typedef int (*sparseport_slice_rows_dense_fn)(const sparseport_exec*, const char* variant, const sparseport_slice_rows_dense_args*, sparseport_status*);
typedef int (*sparseport_induced_subgraph_fn)(const sparseport_exec*, const char* variant, const sparseport_induced_subgraph_args*, sparseport_status*);
typedef int (*sparseport_transpose_fn)(const sparseport_exec*, const char* variant, const sparseport_transpose_args*, sparseport_status*);

typedef struct sparseport_plugin {
  uint32_t abi_version; /* SPARSEPORT_ABI_VERSION the plugin was built against */
  uint32_t table_size;  /* sizeof(sparseport_plugin) the plugin was built with */
  const char* name;     /* the backend token: "reference", "openmp", "cuda", "kokkos" */
  const char* description;
  int32_t memory_space; /* sparseport_memory_space */

  const sparseport_variant* variants;
  int32_t n_variants;

  /* Lifecycle and memory. */
  int (*device_count)(int32_t* count, sparseport_status*);
  /* One line per device into buf (NUL-terminated, truncated to len). */
  int (*describe_devices)(char* buf, size_t len, sparseport_status*);
  int (*context_create)(int32_t device, void** state, sparseport_status*);
  void (*context_destroy)(void* state);
  int (*alloc)(void* state, size_t bytes, void** ptr, sparseport_status*);
  void (*release)(void* state, void* ptr);
  int (*copy)(void* state, void* dst, const void* src, size_t bytes, int32_t kind, sparseport_status*);
  int (*synchronize)(void* state, sparseport_status*);

  /* Whether `variant` applies to `args` (the op's argument struct); 0 = no, with the reason in
   * why->message. Null means every listed variant applies to every valid input. */
  int (*applies)(int32_t op, const char* variant, const void* args, sparseport_status* why);

  /* Ops, one slot each, in sparseport_op order. */
  sparseport_spmm_fn spmm;
  sparseport_sddmm_fn sddmm;
  sparseport_segment_fn segment_reduce;
  sparseport_segment_fn scatter_reduce;
  sparseport_gather_scatter_fn gather_scatter;
  sparseport_attention_fn csr_attention;
  sparseport_slice_rows_fn csr_slice_rows;
  sparseport_slice_rows_dense_fn csr_slice_rows_dense;
  sparseport_induced_subgraph_fn csr_induced_subgraph;
  sparseport_transpose_fn csr_transpose;

  /* ABI 1.1: the device signature the scheduler keys its decisions by. Writes "key=value" lines
   * (NUL-terminated, truncated to len) describing the context's device: hardware first, then
   * versions under keys ending in "_version" (driver, runtime, vendor library). Hardware keys must
   * be stable across runs on the same machine; version keys invalidate cached decisions.
   * Null: the scheduler uses the backend name and describe_devices() instead. */
  int (*device_signature)(void* state, char* buf, size_t len, sparseport_status*);

  /* ABI 1.2: checks index contents in the plugin's memory (O(n), stops early at a violation) and
   * fills *report with the first one (problem 0 when there is none). Returns nonzero only when the
   * check itself failed (a device fault). Null on a device-memory plugin: the front end copies
   * the arrays to the host and checks them there. */
  int (*check_indices)(const sparseport_exec*, const sparseport_index_check*, sparseport_index_report*,
                       sparseport_status*);
  /* ABI 1.3: fills *out for the CSR `a` in the plugin's memory (see sparseport_csr_summary; `want`
   * is SPARSEPORT_SUMMARY_* bits). Null: the scheduler computes it on the host (copying the arrays
   * first on a device-memory plugin). The scheduler calls it on a device-memory plugin only, as the
   * front end calls check_indices: host memory it reads itself. */
  int (*summarize_csr)(const sparseport_exec*, const sparseport_csr* a, uint32_t want, sparseport_csr_summary* out,
                       sparseport_status*);
  /* ABI 1.5: the spmm max/min backward (sparseport_spmm_arg_backward_args); null: Unsupported. */
  int (*spmm_arg_backward)(const sparseport_exec*, const sparseport_spmm_arg_backward_args*, sparseport_status*);
  /* ABI 1.5: run on the caller's stream and allocate scratch through the caller's allocator (see
   * sparseport_external). Null: the plugin has no stream or scratch to share (host plugins). */
  int (*set_external)(void* state, const struct sparseport_external* ext, sparseport_status*);
  /* ABI 1.6: the row softmax of csr_attention_backward (sparseport_csr_softmax_args), in the
   * plugin's memory, ordered like an op. Null: the front end runs it on the host (copying the
   * scores there and back on a device-memory plugin). */
  int (*csr_softmax)(const sparseport_exec*, const sparseport_csr_softmax_args*, sparseport_status*);
  /* ABI 1.7: dst = src converted element by element (rows x cols, any two value types, each with
   * its own ld), rounding to nearest even, NaN kept NaN and overflow to infinity; ordered like an
   * op. The front end's float32 path for 16-bit values uses it on device memory. Null on a
   * device-memory plugin: 16-bit values are Unsupported there. Host plugins may leave it null (the
   * front end converts host memory itself). */
  int (*convert)(const sparseport_exec*, const sparseport_dense* src, const sparseport_dense_mut* dst,
                 sparseport_status*);
  /* ABI 1.10: calls fn(part, arg) once for every part in [0, parts) on the plugin's host threads (at
   * most the context's thread count at a time) and returns when all have returned. fn neither throws
   * nor fails. The scheduler splits the FEATURES pass over host memory this way where the slot is
   * set: a host backend's own workers (OpenMP's spin a while after each op) then count the parts,
   * where threads started by the scheduler would compete with them for the cores. Null: the
   * scheduler starts threads of its own. */
  int (*run_parts)(const sparseport_exec*, int64_t parts, void (*fn)(int64_t part, void* arg), void* arg,
                   sparseport_status*);
  /* Append new fields here only. */
} sparseport_plugin;

/* Each compiled plugin exports one entry point, sparseport_plugin_<token>(), returning its table. */
typedef const sparseport_plugin* (*sparseport_plugin_entry)(void);

#ifdef __cplusplus
}
#endif

#endif /* SPARSEPORT_PLUGIN_ABI_H */
