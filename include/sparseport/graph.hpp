// SPDX-License-Identifier: Apache-2.0
// Host-side graph tools: Matrix Market I/O, deterministic graph generators, graph statistics and
// seeded random dense operands. All of it runs on the host and returns host containers.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
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
  // Adds the mirror (j,i) of every off-diagonal entry (i,j) of a general matrix unless the file
  // already holds an entry at (j,i): the pattern becomes the union of A and A^T, entries of A keep
  // their values and added ones take A[i,j]. Needs a square matrix (InvalidArgument otherwise).
  // Symmetric and skew-symmetric files are symmetric already and are left as read.
  bool symmetrize = false;
  bool drop_self_loops = false;   // drop diagonal entries
  // Sort columns in each row and add up duplicates (in file order; a pattern keeps one entry).
  // Without it, each row keeps its entries in file order (symmetric expansion: entry by entry;
  // symmetrize: the added mirrors after the row's own entries, by increasing source row).
  bool sort_and_merge = false;
  bool keep_values = true;        // false: read and check values but return a pattern
  // Called now and then (each chunk of the input, about 8 MiB) with the fraction of the file read
  // so far (compressed bytes for .gz), and with 1.0 at the end.
  std::function<void(double)> progress;
};

// Reads .mtx or .mtx.gz (by content: gzip magic), coordinate or array, real/integer/pattern,
// general/symmetric/skew-symmetric. Symmetric storage is expanded to both triangles (the diagonal
// once; either triangle may be stored); skew-symmetric too, with negated mirrors (a diagonal entry
// is a ParseError). Array files keep their nonzeros, in row-major order. Pattern files give a
// pattern (empty values). Blank lines, '%' comment lines, trailing blanks and CRLF line ends are
// accepted anywhere after the banner; nothing else is (no extra fields, no values in a pattern
// file, no fractional integers). complex and hermitian files are refused. Throws ParseError
// naming the file and line for any malformed input (line 0: the file as a whole, e.g. it cannot be
// opened), InvalidArgument when a dimension or the expanded nonzero count does not fit index type I.
// Cost: one pass over the file (8 MiB chunks) and a counting sort; peak memory is the COO entries
// plus the result (about 2.5x the result for int32_t/float).
template <class I, class V>
HostCsr<I, V> read_matrix_market(const std::string& path, const MmReadOptions& opt = {}, MmHeader* header = nullptr);

// Reads an array (or coordinate) file as a dense row-major matrix (ld == cols). Symmetry is
// expanded; in a coordinate file missing entries are 0, a pattern's entries 1 and duplicates add up.
template <class V>
HostDense<V> read_matrix_market_dense(const std::string& path);

// Reads only the banner and size line (entries of an array file: the values it stores).
MmHeader read_matrix_market_header(const std::string& path);

struct MmWriteOptions {
  // Default: real, or pattern when A has no values. integer needs whole values (InvalidArgument
  // otherwise); pattern drops the values; real or integer with a pattern A writes 1s.
  std::optional<MmField> field;
  // symmetric / skew_symmetric write the lower triangle (skew: strictly lower) after checking that
  // A (duplicates added up) equals its transpose (skew: minus it); InvalidArgument when it does not.
  MmSymmetry symmetry = MmSymmetry::general;
};

// Writes a coordinate file with 1-based indices and shortest round-trip values, so reading it back
// gives the same matrix (general: the same entries in the same order). gzip when path ends in
// ".gz". Throws InvalidArgument for an inconsistent A, Error when the file cannot be written.
template <class I, class V>
void write_matrix_market(const std::string& path, const HostCsr<I, V>& a, const MmWriteOptions& opt = {});
// Writes an array general real file (column-major, as the format wants); gzip when path ends in ".gz".
template <class V>
void write_matrix_market_dense(const std::string& path, const HostDense<V>& a);

// ---- Generators ------------------------------------------------------------------------------
//
// Specs (identical output on every machine for a given seed; duplicates merged, columns sorted):
//   er:N:P                        Erdos-Renyi G(N, P), N x N, each entry present with probability P
//                                 (geometric skipping: O(N + nnz); P below 2^-64 gives no entries)
//   rmat:SCALE:EDGEFACTOR         RMAT, N = 2^SCALE, EDGEFACTOR*N edges drawn, Graph500 a=0.57
//                                 b=c=0.19 d=0.05, no noise and no vertex permutation (low vertex
//                                 numbers are the hubs); repeated edges stored once, self loops kept.
//                                 SCALE <= 40, and the draws must fit index type I
//   rmatp:SCALE:EDGEFACTOR:A:B:C  RMAT with quadrant probabilities a=A, b=B, c=C, d=1-A-B-C
//                                 (A+B+C <= 1); with 0.57:0.19:0.19 it is rmat:SCALE:EDGEFACTOR
//   hubs:N:DEG:NHUBS:HUBDEG       N x N; every row holds DEG distinct random columns except NHUBS hub
//                                 rows with HUBDEG; hub h is row floor((2h+1)*N / (2*NHUBS))
//   band:N:DEG                    banded mesh: row i holds columns i-DEG/2 .. i+DEG/2 clipped to
//                                 [0, N), i.e. 2*(DEG/2)+1 columns away from the edges
//   megarow:N:DEG:FRACTION        N x N with exactly N*DEG entries; row 0 holds round(FRACTION*N*DEG)
//                                 distinct columns (so FRACTION*N*DEG <= N), the rest are spread
//                                 over rows 1..N-1 with degrees differing by at most one
//   chunglu:N:AVGDEG:EXPONENT     directed Chung-Lu, N x N: vertex of rank r has weight
//                                 (r+1)^(-1/(EXPONENT-1)), scaled so that row r expects
//                                 AVGDEG*N*w_r/sum(w) of the N*AVGDEG draws (the largest capped at N);
//                                 both ends of each draw are chosen in proportion to the weights,
//                                 and ranks are vertex ids under a random permutation (no locality).
//                                 EXPONENT in [1.5, 4], AVGDEG <= N. Repeated draws are merged, so
//                                 nnz < N*AVGDEG: almost none lost at EXPONENT 3, 1-2% at 2.5, a
//                                 fifth at 2.1, most below 2 (the hubs' rows and columns saturate)
//   sbm:N:BLOCKS:DEGIN:DEGOUT     stochastic block model: BLOCKS contiguous communities, block b the
//                                 rows floor(b*N/BLOCKS) .. floor((b+1)*N/BLOCKS)-1; each row holds
//                                 exactly DEGIN distinct random columns of its own block and DEGOUT
//                                 outside it (DEGOUT = 0: block diagonal)
//   mesh2d:NX:NY:RENUMBER         5-point stencil (the diagonal and the 4 grid neighbours) on an
//                                 NX x NY grid, vertex (x, y) = y*NX + x; 5*NX*NY - 2*NX - 2*NY entries.
//                                 RENUMBER 0: that natural order; 1: vertex ids randomly permuted
//                                 (the same graph, no locality)
//   mesh3d:NX:NY:NZ:RENUMBER      7-point stencil on an NX x NY x NZ grid, (x, y, z) = (z*NY + y)*NX + x
//   mesh3d27:NX:NY:NZ:RENUMBER    27-point stencil (every vertex within 1 in each dimension)
//   road:NX:NY:KEEP               road-like, natural order: each edge of the 4-neighbour NX x NY grid
//                                 kept with probability KEEP and stored both ways, plus about NX*NY/100
//                                 diagonal shortcuts (at most one per vertex); no self loops, degrees 0..5
//   bipartite:ROWS:COLS:DEG       ROWS x COLS, a feature matrix: row i draws 1 + Geometric columns
//                                 (mean DEG, at most COLS; DEG <= COLS), column popularity
//                                 (rank+1)^-0.8 over a random ranking; repeats merged
//   powerlaw                      the built-in default graph: rmat:16:8
// Any spec may end in @SEED (a whole number, e.g. chunglu:100000:16:2.1@7): it is then generated
// with that seed instead of GenOptions::seed, for the structure and the values.
// Numbers may be written 1000000, 1e6 or 2e-5; whole-number fields must be whole, in [0, 2^62].
// Values: unless GenOptions::pattern, A(i,j) is uniform in [0.5, 1.5) from a counter-based hash of
// (seed, min(i,j), max(i,j)): a symmetric pattern gives a symmetric matrix, and values are away from
// zero. Columns come from the same kind of generator (splitmix64, integer-only draws), never from
// std:: distributions, which differ between standard libraries.
// Throws InvalidArgument naming the spec and the field for a malformed or unsatisfiable one
// (missing, empty or extra fields, non-numbers, negative numbers, P or FRACTION outside [0, 1],
// SCALE > 40, more rows or entries than index type I can address, a seed that is not a uint64_t).
// Cost: O(N + nnz) for er, hubs, band, megarow, sbm, the meshes, road and bipartite (times log DEG:
// a sort per row); rmat, rmatp and chunglu hold every draw as a packed key and radix-sort them
// (16 bytes per draw while sorting, 32 above SCALE 32 or 2^32 vertices).
struct GenOptions {
  uint64_t seed = 1;     // a spec's @SEED suffix replaces it
  bool pattern = false;  // true: return the pattern only (no values)
};
// True when spec starts with a generator name followed by ':', '@' or the end ("er:10:0.5",
// "powerlaw", "powerlaw@3", also "er" alone, so that generate() can say what is missing instead of
// a file not being found).
bool is_generator_spec(std::string_view spec);
template <class I, class V>
HostCsr<I, V> generate(std::string_view spec, const GenOptions& opt = {});

// A Matrix Market path or a generator spec; empty means the built-in default ("powerlaw").
// A spec is generated with the default GenOptions (seed 1, or K for SPEC@K); of opt it honours
// keep_values, drop_self_loops and symmetrize (the union with A^T: generated values are symmetric,
// so each position keeps its one value; InvalidArgument for a rectangular bipartite spec) and calls
// progress(1.0) when done. A path goes to read_matrix_market.
template <class I, class V>
HostCsr<I, V> load_graph(const std::string& spec_or_path, const MmReadOptions& opt = {});

// ---- Statistics ------------------------------------------------------------------------------

// Row degrees count stored entries (a repeated column counts each time); quantiles are
// nearest-rank: deg_pQ is the ceil(Q/100 * rows)-th smallest row degree (0 for no rows). The
// symmetry flags judge the matrix with repeated entries added up (rows != cols: both false).
// Cost: O(rows + nnz) time and memory (a transpose by counting), plus a per-row sort only when
// columns are unsorted or repeated. Throws InvalidArgument for a structurally invalid CSR.
struct GraphInfo {
  int64_t rows = 0, cols = 0, nnz = 0;
  int64_t deg_p50 = 0, deg_p90 = 0, deg_p99 = 0, deg_max = 0;  // row degrees
  double deg_mean = 0.0;
  double skew = 0.0;  // max / mean
  int64_t empty_rows = 0;
  int64_t self_loops = 0;  // stored diagonal entries
  bool pattern_symmetric = false;  // the pattern equals its transpose
  bool symmetric = false;          // pattern and values equal their transpose
};
template <class I, class V>
GraphInfo graph_info(const HostCsr<I, V>& a);

// ---- Random operands -------------------------------------------------------------------------

// Fills every stored element with values uniform in [lo, hi) from a counter-based generator, so
// the result depends only on seed and position, never on the platform or thread count.
// Element (i, j) gets the same value whatever ld is (padding j in [cols, ld) is filled too, with
// what column j would get); a vector of n is the 1 x n matrix. Values are lo + u*(hi-lo) for u a
// 53-bit fraction, rounded to V and kept inside [lo, hi). Throws InvalidArgument when lo or hi is
// not finite, lo >= hi, no V lies in [lo, hi), or m.data is smaller than rows*ld.
template <class V>
void fill_random(HostDense<V>& m, uint64_t seed, double lo = -1.0, double hi = 1.0);
template <class V>
void fill_random(std::vector<V>& v, uint64_t seed, double lo = -1.0, double hi = 1.0);

}  // namespace sparseport
