// SPDX-License-Identifier: Apache-2.0
// gather_scatter: out[dst[e],:] (reduce)= w[e] * x[src[e],:]. The messages are gathered on the fly
// inside the reduction of segment_reduce.cpp (never materialised E x F), with the same variants:
// sorted_add, sorted_deterministic and scatter_atomic.
#include "kernels/openmp/common.hpp"

SPARSEPORT_OPENMP_BEGIN_ISA
namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA {

void gather_scatter(const sparseport_gather_scatter_args& args, SegmentVariant v, int threads) {
  Messages m;
  m.count = args.edges.nnz;
  m.features = args.x.cols;
  m.dst = args.edges.row;
  m.rows = args.x.data;
  m.ld = args.x.ld;
  m.pick = args.edges.col;
  m.w = args.edges.values;
  m.out = args.out.data;
  m.out_rows = args.out.rows;
  m.out_ld = args.out.ld;
  m.index_type = args.edges.index_type;
  m.value_type = args.x.value_type;
  m.reduce = args.reduce;
  reduce_messages(m, v, threads);
}

}  // namespace sparseport::openmp::SPARSEPORT_OPENMP_ISA
SPARSEPORT_OPENMP_END_ISA
