// SPDX-License-Identifier: Apache-2.0
// Host-side graph tools: Matrix Market I/O, deterministic graph generators, graph statistics and
// seeded random dense operands. All of it runs on the host and returns host containers.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "sparseport/views.hpp"

namespace sparseport {

// ---- Matrix Market ---------------------------------------------------------------------------

enum class MmFormat { coordinate, array };
enum class MmField { real, integer, pattern };
enum class MmSymmetry { general, symmetric, skew_symmetric };

struct MmHeader {
  MmFormat format = MmFormat::coordinate;
  MmField field = MmField::real;
  MmSymmetry symmetry = MmSymmetry::general;
  int64_t rows = 0, cols = 0;
  int64_t entries = 0;  // as stored in the file (before symmetry expansion)
};

struct MmReadOptions {
  bool symmetrize = false;        // add A^T (pattern union; values of both kept) to a general matrix
  bool drop_self_loops = false;   // drop diagonal entries
  bool sort_and_merge = false;    // sort columns in each row and add up duplicates
  bool keep_values = true;        // false: read values but return a pattern
  // Called now and then with the fraction of the input read, for progress reports.
  std::function<void(double)> progress;
};

// Reads .mtx or .mtx.gz (by content: gzip magic), coordinate or array, real/integer/pattern,
// general/symmetric/skew-symmetric (symmetric storage is expanded to both triangles). Array files
// keep their nonzeros. Pattern files give a pattern (empty values). Throws ParseError naming the
// file and line for any malformed input, InvalidArgument when a dimension does not fit index type I.
template <class I, class V>
HostCsr<I, V> read_matrix_market(const std::string& path, const MmReadOptions& opt = {}, MmHeader* header = nullptr);

// Reads an array (or coordinate) file as a dense row-major matrix.
template <class V>
HostDense<V> read_matrix_market_dense(const std::string& path);

// Reads only the banner and size line.
MmHeader read_matrix_market_header(const std::string& path);

// Writes coordinate general (real, or pattern when A has no values); gzip when path ends in ".gz".
template <class I, class V>
void write_matrix_market(const std::string& path, const HostCsr<I, V>& a);
// Writes an array general real file.
template <class V>
void write_matrix_market_dense(const std::string& path, const HostDense<V>& a);

// ---- Generators ------------------------------------------------------------------------------
//
// Specs (identical output on every machine for a given seed; duplicates merged, columns sorted):
//   er:N:P                        Erdos-Renyi, N x N, each entry present with probability P
//   rmat:SCALE:EDGEFACTOR         RMAT, N = 2^SCALE, EDGEFACTOR*N edges drawn, Graph500 a=0.57 b=c=0.19
//   hubs:N:DEG:NHUBS:HUBDEG       N rows of about DEG random columns, NHUBS of them with HUBDEG
//   band:N:DEG                    banded mesh: row i holds columns i-DEG/2 .. i+DEG/2 clipped
//   megarow:N:DEG:FRACTION        N x N with N*DEG entries; row 0 holds FRACTION of them (distinct
//                                 columns, so FRACTION*N*DEG <= N), the rest spread over other rows
//   powerlaw                      the built-in default graph (rmat:16:8, seed 1)
// Throws InvalidArgument naming the spec for a malformed or unsatisfiable one.
struct GenOptions {
  uint64_t seed = 1;
};
bool is_generator_spec(std::string_view spec);  // starts with a known generator name
template <class I, class V>
HostCsr<I, V> generate(std::string_view spec, const GenOptions& opt = {});

// A Matrix Market path or a generator spec; empty means the built-in default ("powerlaw").
template <class I, class V>
HostCsr<I, V> load_graph(const std::string& spec_or_path, const MmReadOptions& opt = {});

// ---- Statistics ------------------------------------------------------------------------------

struct GraphInfo {
  int64_t rows = 0, cols = 0, nnz = 0;
  int64_t deg_p50 = 0, deg_p90 = 0, deg_p99 = 0, deg_max = 0;  // row degrees
  double deg_mean = 0.0;
  double skew = 0.0;  // max / mean
  int64_t empty_rows = 0;
  int64_t self_loops = 0;
  bool pattern_symmetric = false;  // the pattern equals its transpose
  bool symmetric = false;          // pattern and values equal their transpose
};
template <class I, class V>
GraphInfo graph_info(const HostCsr<I, V>& a);

// ---- Random operands -------------------------------------------------------------------------

// Fills every stored element with values uniform in [lo, hi) from a counter-based generator, so
// the result depends only on seed and position, never on the platform or thread count.
template <class V>
void fill_random(HostDense<V>& m, uint64_t seed, double lo = -1.0, double hi = 1.0);
template <class V>
void fill_random(std::vector<V>& v, uint64_t seed, double lo = -1.0, double hi = 1.0);

}  // namespace sparseport
