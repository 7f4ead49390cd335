// SPDX-License-Identifier: Apache-2.0
// sparseport_bench_values16: the 16-bit values issue's numbers in one run, on the cuda plugin
// through the public API. For every input, F and value type (f32, bf16, f16) it times
//  - spmm (sum): the scheduler's choice (no variant named), every cuda spmm variant by name that
//    applies, and the vendor (spmm.cusparse) in that value type;
//  - sddmm (the scheduler's choice and sddmm.cusparse), csr_attention (Q = K = V width F),
//    segment_reduce (sum; the graph's COO rows as the sorted index, E x F messages) and
//    gather_scatter (sum; the graph as COO): the scheduler's choice;
// and writes one JSON record per row (PREFIX.json) and a Markdown summary (PREFIX.md): median
// time, the compulsory-traffic floor in that value type and its fraction, which variant ran and
// whether it ran on float32 copies (Decision::via_f32), the speedups over our own float32, over
// the vendor in the same value type and over the best path a cuSPARSE user has (the faster of
// spmm.cusparse in 16 bits and spmm.cusparse in float32 on float32 copies of the operands), and for
// spmm the error against a float64 host reference computed from the same (rounded) inputs.
// README.md ("16-bit values: sparseport_bench_values16") says how to run it and how long it takes.
//
// How a row is timed (as sparseport_bench_cuda, whose timer and copy-bandwidth measurement are
// restated here: that suite keeps them in its own translation unit):
//  - operands live in device memory; the dense operands and the output are allocated in several
//    copies (together past a few times the L2) and each call takes the next copy, so no call finds
//    its dense inputs in the L2 because the previous call left them there. The graph's arrays
//    (CSR, COO rows, values in each type) are one copy.
//  - 3 warm-up calls (the first lets the scheduler decide; spmm on graphs of at most 5M entries
//    then makes one more call on copy 0 for the accuracy check), then calls bracketed by CUDA
//    events on the context's stream (sparseport_cuda_stream), queued in batches behind
//    device-to-device "ballast" copies so the events measure GPU time rather than the host's
//    queueing: at least --min-calls calls and --min-ms of GPU time (at most --max-calls); the
//    median per call is the row's time. A row whose calls take long (the row-parallel variants on
//    a mega-row: seconds per call) gets one or two warm-ups and at most --max-row-s seconds of
//    timed calls (at least one).
//  - the floor's copy bandwidth is a device-to-device cudaMemcpyAsync measured in the same run.
// Without a usable CUDA device the program says "no CUDA device: nothing to measure" and exits 0;
// --list and --help need no device.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <iomanip>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <numeric>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cuda_timing.hpp"
#include "datasets.hpp"
#include "harness.hpp"
#include "plugins/cuda/diagnostics.h"
#include "sparseport/sparseport.hpp"

namespace {

using namespace sparseport;
using namespace sparseport::bench;
using Clock = std::chrono::steady_clock;

constexpr const char* kProgram = "sparseport_bench_values16";
const Clock::time_point kProgramStart = Clock::now();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Seeds: the dense operands' as in sparseport_bench_cuda; A's values are drawn afresh (below).
constexpr uint64_t kSeedRows = 11, kSeedCols = 12, kSeedCols2 = 13, kSeedMessages = 14, kSeedAValues = 17;

// The generated graphs of sparseport_bench_cuda's full suite (bench_cuda.cpp, gpu_full_generators;
// restated: it is local to that file), and its "large uniform" input (the uniform companion of the
// mega-row graph, 32M entries: far past the L2, so its floor fraction means what it says).
const std::set<std::string>& suite_generators() {
  static const std::set<std::string> s = {"er:200000:2e-5", "rmat:20:16", "megarow:2000000:16:0.05",
                                          "band:1000000:16"};
  return s;
}
constexpr const char* kLargeUniform = "er:2000000:8e-6";

double elapsed_s() { return std::chrono::duration<double>(Clock::now() - kProgramStart).count(); }

// ---- options ----------------------------------------------------------------------------------

struct Options {
  std::string out_prefix;            // --out PREFIX: PREFIX.json, PREFIX.md
  std::string graph_regex;           // --graphs REGEX
  std::vector<int64_t> features = {32, 64, 128, 256};
  std::vector<ValueType> dtypes = {ValueType::f32, ValueType::bf16, ValueType::f16};
  std::vector<sparseport_op> ops = {SPARSEPORT_OP_SPMM, SPARSEPORT_OP_SDDMM, SPARSEPORT_OP_CSR_ATTENTION,
                                    SPARSEPORT_OP_SEGMENT_REDUCE, SPARSEPORT_OP_GATHER_SCATTER};
  std::string variant_regex;         // --variants REGEX (on "auto" or the variant's name)
  std::string uniform = kLargeUniform;
  bool twins = false;
  bool list = false;
  bool help = false;
  std::string data_dir;
  int min_calls = 20;
  double min_ms = 20.0;
  int max_calls = 2000;
  int warmups = 3;
  double max_row_s = 1.0;            // a slow row's timed calls stop after this much GPU time (at least one)
  double accuracy_max_nnz = 5e6;     // the float64 reference only on graphs with at most this many entries
  double deadline_s = 0.0;           // rows starting later are recorded as not run; 0: none
  double max_gb = 0.0;               // operand cap; 0: 70 % of the free device memory after set-up
  double rotate_l2 = 3.0;
  double copy_gbps = 0.0;            // given instead of measured
  std::vector<std::string> merge;    // --merge: earlier outputs to combine (no device needed)
};

std::string usage() {
  return std::string("usage: ") + kProgram + R"( [--out PREFIX] [options]

Times spmm (the scheduler's choice, every cuda spmm variant, spmm.cusparse), sddmm (the scheduler's
choice, sddmm.cusparse), csr_attention, segment_reduce and gather_scatter (the scheduler's choice)
in float32, bfloat16 and float16 on the cuda plugin, and writes one JSON record per row to
PREFIX.json and a Markdown summary to PREFIX.md (benchmarks/README.md, "16-bit values").

  --out PREFIX          write PREFIX.json and PREFIX.md (rewritten after every input, so a run cut
                        short keeps what it measured); default: values16
  --graphs REGEX        inputs whose name matches (ECMAScript, searched anywhere in the name)
  --F 32,64,128,256     feature widths
  --dtypes f32,bf16,f16 value types; f32 is always measured (every ratio needs it)
  --ops LIST            of spmm,sddmm,csr_attention,segment_reduce,gather_scatter (default all)
  --variants REGEX      rows whose variant matches ("auto" is the scheduler's choice); the vendor
                        rows are kept whatever REGEX says (the ratios need them)
  --twins               also products-twin and reddit-twin (114-122M entries; each generated once
                        on the host, about 10-60 s)
  --uniform SPEC        the large uniform input of the summary's floor fraction (default )" +
         std::string(kLargeUniform) + R"(;
                        'none': leave it out)
  --min-calls N         timed calls per row, at least (default 20)
  --min-ms T            GPU milliseconds per row, at least (default 20)
  --max-calls N         timed calls per row, at most (default 2000)
  --warmups N           untimed calls before timing (default 3)
  --max-row-s S         a row whose calls take long times at most S seconds of calls, at least one (default 1)
  --accuracy-max-nnz N  spmm's float64 reference on graphs with at most N entries (default 5e6)
  --deadline S          rows that would start after S seconds are recorded as not run (default: none)
  --max-gb G            skip rows whose device operands (rotated copies and float32 copies
                        included) need more (default: 70 % of the free device memory after set-up)
  --rotate-l2 X         rotate operand copies past X times the L2 (default 3)
  --copy-gbps B         use this device copy bandwidth (GB/s) for the floor instead of measuring it
  --list                print the rows this command would run and exit (no device needed)
  --merge A.json,B.json combine the outputs of earlier runs (e.g. one device call per group of
                        inputs) into PREFIX.json and PREFIX.md, ratios recomputed across them; no
                        device needed (repeatable; a row present twice keeps the later measured one)
  --help                this text

Inputs: the generated graphs of sparseport_bench_cuda's full suite (er:200000:2e-5 rmat:20:16
megarow:2000000:16:0.05 band:1000000:16), every .mtx/.mtx.gz in SPARSEPORT_DATA_DIR (default: the
configure-time data folder, ../shared/data), the large uniform input, then the twins (--twins).
A's values are uniform in [-1, 1) (seed 17) in every value type (rounded to 16 bits from the same
float32 numbers), so float16 does not overflow on matrices with large entries; the dense operands
are uniform in [-1, 1) as in sparseport_bench_cuda.
)";
}

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}

double parse_number(const std::string& flag, const std::string& text, double lo) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || !(v >= lo) || !std::isfinite(v))
    throw InvalidArgument(std::string(kProgram) + ": " + flag + " is '" + text + "', which is not a number >= " +
                          std::to_string(lo) + ".");
  return v;
}

ValueType dtype_from_name(const std::string& s) {
  if (s == "f32") return ValueType::f32;
  if (s == "bf16") return ValueType::bf16;
  if (s == "f16") return ValueType::f16;
  throw InvalidArgument(std::string(kProgram) + ": --dtypes takes f32, bf16 and f16, not '" + s + "'.");
}

Options parse_args(int argc, char** argv) {
  Options o;
  o.data_dir = default_data_dir();
  o.out_prefix = "values16";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i], v;
    bool has_value = false;
    if (const size_t eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      v = a.substr(eq + 1);
      a = a.substr(0, eq);
      has_value = true;
    }
    const auto value = [&]() -> std::string {
      if (has_value) return v;
      if (i + 1 >= argc) throw InvalidArgument(std::string(kProgram) + ": " + a + " needs a value (see --help).");
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      o.help = true;
    } else if (a == "--list") {
      o.list = true;
    } else if (a == "--twins") {
      o.twins = true;
    } else if (a == "--out") {
      o.out_prefix = value();
    } else if (a == "--graphs") {
      o.graph_regex = value();
    } else if (a == "--F" || a == "--f") {
      o.features = parse_features("--F", value());
    } else if (a == "--dtypes") {
      o.dtypes = {ValueType::f32};
      for (const std::string& s : split_list(value())) {
        const ValueType t = dtype_from_name(s);
        if (std::find(o.dtypes.begin(), o.dtypes.end(), t) == o.dtypes.end()) o.dtypes.push_back(t);
      }
    } else if (a == "--ops") {
      o.ops.clear();
      for (const std::string& s : split_list(value())) {
        const sparseport_op op = op_from_name(s);
        if (op != SPARSEPORT_OP_SPMM && op != SPARSEPORT_OP_SDDMM && op != SPARSEPORT_OP_CSR_ATTENTION &&
            op != SPARSEPORT_OP_SEGMENT_REDUCE && op != SPARSEPORT_OP_GATHER_SCATTER)
          throw InvalidArgument(std::string(kProgram) + ": --ops takes spmm, sddmm, csr_attention, segment_reduce "
                                "and gather_scatter, not '" + s + "'.");
        o.ops.push_back(op);
      }
      if (o.ops.empty()) throw InvalidArgument(std::string(kProgram) + ": --ops is empty.");
    } else if (a == "--variants") {
      o.variant_regex = value();
    } else if (a == "--uniform") {
      o.uniform = value();
    } else if (a == "--min-calls") {
      o.min_calls = static_cast<int>(parse_number(a, value(), 1));
    } else if (a == "--min-ms") {
      o.min_ms = parse_number(a, value(), 0);
    } else if (a == "--max-calls") {
      o.max_calls = static_cast<int>(parse_number(a, value(), 1));
    } else if (a == "--warmups") {
      o.warmups = static_cast<int>(parse_number(a, value(), 1));
    } else if (a == "--max-row-s") {
      o.max_row_s = parse_number(a, value(), 0);
    } else if (a == "--accuracy-max-nnz") {
      o.accuracy_max_nnz = parse_number(a, value(), 0);
    } else if (a == "--deadline") {
      o.deadline_s = parse_number(a, value(), 0);
    } else if (a == "--max-gb") {
      o.max_gb = parse_number(a, value(), 0);
    } else if (a == "--rotate-l2") {
      o.rotate_l2 = parse_number(a, value(), 0);
    } else if (a == "--copy-gbps") {
      o.copy_gbps = parse_number(a, value(), 0);
    } else if (a == "--merge") {
      for (const std::string& file : split_list(value())) o.merge.push_back(file);
    } else {
      throw InvalidArgument(std::string(kProgram) + ": unknown argument '" + argv[i] + "' (see --help).");
    }
  }
  o.max_calls = std::max(o.max_calls, o.min_calls);
  // Checked here so a bad pattern fails before anything runs.
  for (const std::string* re : {&o.graph_regex, &o.variant_regex}) {
    try {
      (void)std::regex(*re, std::regex::ECMAScript);
    } catch (const std::regex_error& ex) {
      throw InvalidArgument(std::string(kProgram) + ": '" + *re + "' is not a valid regular expression (" + ex.what() +
                            ").");
    }
  }
  return o;
}

// ---- inputs and rows ----------------------------------------------------------------------------

struct Input {
  DatasetSpec spec;
  std::string role;  // "suite" (bench_cuda's generated graphs and the data folder), "large uniform", "twin"
};

std::vector<Input> inputs(const Options& o) {
  std::vector<Input> out;
  for (const DatasetSpec& d : datasets(SuiteSize::full, o.data_dir, o.graph_regex))
    if (d.is_file || suite_generators().count(d.name) != 0) out.push_back({d, "suite"});
  const std::regex re(o.graph_regex, std::regex::ECMAScript);
  const auto wanted = [&](const std::string& n) { return o.graph_regex.empty() || std::regex_search(n, re); };
  if (o.uniform != "none" && wanted(o.uniform)) {
    bool present = false;
    for (Input& in : out)
      if (!in.spec.is_file && in.spec.name == o.uniform) {
        in.role = "large uniform";
        present = true;
      }
    if (!present) out.push_back({{o.uniform, o.uniform, false}, "large uniform"});
  }
  if (o.twins)
    for (const DatasetSpec& t : twin_datasets())
      if (wanted(t.name)) out.push_back({t, "twin"});
  return out;
}

// One row to time: (op, value type, F, the variant asked for; "" = the scheduler's choice).
struct RowSpec {
  sparseport_op op;
  ValueType dtype;
  int64_t features;
  std::string requested;
};

std::string shown(const std::string& requested) { return requested.empty() ? "auto" : requested; }

// The requested variants of op, in the order they run: the scheduler's choice, then (spmm) every
// cuda spmm variant in the plugin's order, vendor ones included, or (other ops) the vendor variant.
std::vector<std::string> requested_variants(const PluginInfo& cuda, sparseport_op op, const Options& o) {
  std::vector<std::string> v = {""};
  for (const VariantInfo& info : cuda.variants) {
    if (info.op != op || info.tf32) continue;  // TF32: only with consent (cuda_timing --tc times it)
    if (op == SPARSEPORT_OP_SPMM || info.is_vendor) v.push_back(info.name);
  }
  if (!o.variant_regex.empty()) {
    const std::regex re(o.variant_regex, std::regex::ECMAScript);
    const std::string vendor = cuda.vendor_variant(op);
    const auto keep = [&](const std::string& n) {
      return (!vendor.empty() && n == vendor) || std::regex_search(shown(n), re);
    };
    v.erase(std::remove_if(v.begin(), v.end(), [&](const std::string& n) { return !keep(n); }), v.end());
  }
  return v;
}

// Every row of one input, in run order: F, then value type (f32 first), then op, then variant.
std::vector<RowSpec> rows_of(const PluginInfo& cuda, const Options& o) {
  std::vector<RowSpec> rows;
  for (int64_t f : o.features)
    for (ValueType t : o.dtypes)
      for (sparseport_op op : o.ops)
        for (const std::string& v : requested_variants(cuda, op, o)) rows.push_back({op, t, f, v});
  return rows;
}

// ---- values in three types on the host ----------------------------------------------------------

uint16_t bits16(float f, ValueType t) { return t == ValueType::f16 ? half(f).bits : bfloat16(f).bits; }
float float_of16(uint16_t b, ValueType t) {
  return t == ValueType::f16 ? static_cast<float>(half::from_bits(b)) : static_cast<float>(bfloat16::from_bits(b));
}

// v rounded to t, as the bytes the device holds.
std::vector<unsigned char> encode(const std::vector<float>& v, ValueType t) {
  const size_t es = static_cast<size_t>(size_of(t));
  std::vector<unsigned char> out(v.size() * es);
  if (t == ValueType::f32) {
    if (!v.empty()) std::memcpy(out.data(), v.data(), v.size() * 4);
    return out;
  }
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t b = bits16(v[i], t);
    std::memcpy(out.data() + 2 * i, &b, 2);
  }
  return out;
}

// The floats that n elements of type t at p hold.
std::vector<float> decode(const unsigned char* p, size_t n, ValueType t) {
  std::vector<float> out(n);
  if (t == ValueType::f32) {
    if (n > 0) std::memcpy(out.data(), p, n * 4);
    return out;
  }
  for (size_t i = 0; i < n; ++i) {
    uint16_t b;
    std::memcpy(&b, p + 2 * i, 2);
    out[i] = float_of16(b, t);
  }
  return out;
}

// The values each value type sees of v (v itself for f32, v rounded to 16 bits and back otherwise).
std::vector<float> rounded(const std::vector<float>& v, ValueType t) {
  if (t == ValueType::f32) return v;
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = float_of16(bits16(v[i], t), t);
  return out;
}

// Host blocks of 2^20 random floats, uniform in [-1, 1), one per seed, replicated on the device to
// fill an operand (as sparseport_bench_cuda does): element p of a filled buffer is block[p % 2^20].
constexpr size_t kBlock = size_t{1} << 20;
const std::vector<float>& random_block(uint64_t seed) {
  static std::map<uint64_t, std::vector<float>> blocks;
  auto it = blocks.find(seed);
  if (it == blocks.end()) {
    std::vector<float> b(kBlock);
    fill_random(b, seed);
    it = blocks.emplace(seed, std::move(b)).first;
  }
  return it->second;
}

// ---- the graph and the operands on the device ---------------------------------------------------

template <class T>
Buffer upload(const Context& ctx, const T* data, size_t n) {
  Buffer b = ctx.allocate(std::max<size_t>(n, 1) * sizeof(T));
  if (n > 0) ctx.copy_to_backend(b.data(), data, n * sizeof(T));
  return b;
}

int value_slot(ValueType t) { return t == ValueType::f32 ? 0 : t == ValueType::bf16 ? 1 : 2; }

// One graph on the device: CSR arrays, the COO row index, and A's values in each value type asked
// for (uniform in [-1, 1), seed kSeedAValues, rounded from the same floats).
struct DeviceGraph {
  std::shared_ptr<const Graph> host;
  std::vector<float> values32;  // A's values as float32 (the 16-bit types hold these rounded)
  Buffer rowptr, colind, coo_row;
  Buffer values[3];

  DeviceGraph(const Context& ctx, std::shared_ptr<const Graph> g, const std::vector<ValueType>& types)
      : host(std::move(g)) {
    const HostCsr<int32_t, float>& c = host->csr;
    values32.resize(static_cast<size_t>(c.nnz()));
    fill_random(values32, kSeedAValues);
    rowptr = upload(ctx, c.rowptr.data(), c.rowptr.size());
    colind = upload(ctx, c.colind.data(), c.colind.size());
    coo_row = upload(ctx, host->coo_row.data(), host->coo_row.size());
    for (ValueType t : types) {
      const std::vector<unsigned char> bytes = encode(values32, t);
      values[value_slot(t)] = upload(ctx, bytes.data(), bytes.size());
    }
  }
  CsrView csr(ValueType t) const {
    const HostCsr<int32_t, float>& c = host->csr;
    return CsrView{c.rows, c.cols, c.nnz(), rowptr.data(), colind.data(), values[value_slot(t)].data(),
                   IndexType::i32, t};
  }
  CooView coo(ValueType t) const {
    const HostCsr<int32_t, float>& c = host->csr;
    return CooView{c.rows, c.cols, c.nnz(), coo_row.data(), colind.data(), values[value_slot(t)].data(),
                   IndexType::i32, t};
  }
  IndexView index() const { return IndexView{host->csr.nnz(), coo_row.data(), IndexType::i32}; }
};

// (rows, cols, seed) of each dense role of op, the output last (seed 0).
struct Shape {
  int64_t rows, cols;
  uint64_t seed;
};
std::vector<Shape> role_shapes(sparseport_op op, const Graph& g, int64_t f) {
  const int64_t m = g.csr.rows, k = g.csr.cols, nnz = g.csr.nnz();
  switch (op) {
    case SPARSEPORT_OP_SPMM:
    case SPARSEPORT_OP_GATHER_SCATTER: return {{k, f, kSeedCols}, {m, f, 0}};
    case SPARSEPORT_OP_SDDMM: return {{m, f, kSeedRows}, {k, f, kSeedCols}, {nnz, 1, 0}};
    case SPARSEPORT_OP_SEGMENT_REDUCE: return {{nnz, f, kSeedMessages}, {m, f, 0}};
    case SPARSEPORT_OP_CSR_ATTENTION: return {{m, f, kSeedRows}, {k, f, kSeedCols}, {k, f, kSeedCols2}, {m, f, 0}};
    default: throw InvalidArgument(std::string(kProgram) + ": op '" + op_name(op) + "' is not measured here.");
  }
}

// Elements between copies: a multiple of 128, so every copy starts on a 256-byte boundary in each type.
size_t padded(size_t elems) { return (elems + 127) / 128 * 128; }

int64_t set_bytes(sparseport_op op, const Graph& g, int64_t f, ValueType t) {
  int64_t b = 0;
  for (const Shape& s : role_shapes(op, g, f)) b += static_cast<int64_t>(padded(static_cast<size_t>(s.rows * s.cols)));
  return b * size_of(t);
}

struct Role {
  int64_t rows = 0, cols = 0;
  size_t stride = 0;  // elements between copies
  size_t esize = 4;
  ValueType type = ValueType::f32;
  Buffer buf;
  void* at(int copy) const {
    return static_cast<unsigned char*>(buf.data()) + stride * esize * static_cast<size_t>(copy);
  }
  DenseView view(int copy) const { return DenseView{rows, cols, cols, at(copy), type}; }
  DenseMutView mut(int copy) const { return DenseMutView{rows, cols, cols, at(copy), type}; }
  size_t elems() const { return static_cast<size_t>(rows) * static_cast<size_t>(cols); }
};

// The dense operands of one (graph, F, value type, op), in `copies` copies, shared by its rows.
class OpCase {
 public:
  OpCase(const Context& ctx, cudaStream_t stream, sparseport_op op, std::shared_ptr<const DeviceGraph> g, int64_t f,
         ValueType t, int copies)
      : op_(op), type_(t), g_(std::move(g)), copies_(copies), stream_(stream) {
    const std::vector<Shape> shapes = role_shapes(op_, *g_->host, f);
    for (size_t i = 0; i < shapes.size(); ++i) {
      Role r;
      r.rows = shapes[i].rows;
      r.cols = shapes[i].cols;
      r.stride = padded(r.elems());
      r.esize = static_cast<size_t>(size_of(t));
      r.type = t;
      const size_t total = r.stride * static_cast<size_t>(copies_);
      r.buf = ctx.allocate(std::max<size_t>(total, 128) * r.esize);
      if (i + 1 < shapes.size()) fill(ctx, r, total, shapes[i].seed);
      roles_.push_back(std::move(r));
    }
    const Role& out = roles_.back();
    cuda_ok(cudaMemsetAsync(out.buf.data(), 0xff, out.stride * static_cast<size_t>(copies_) * out.esize, stream_),
            "cudaMemsetAsync (output)");
    cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (operands)");
  }

  int copies() const { return copies_; }

  void run(const Context& ctx, const std::string& variant, int copy) const {
    switch (op_) {
      case SPARSEPORT_OP_SPMM: {
        SpmmOptions opt;
        opt.variant = variant;
        spmm(ctx, g_->csr(type_), roles_[0].view(copy), roles_[1].mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_SDDMM: {
        OpOptions opt;
        opt.variant = variant;
        sddmm(ctx, g_->csr(type_), roles_[0].view(copy), roles_[1].view(copy), roles_[2].mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_SEGMENT_REDUCE: {
        ReduceOptions opt;
        opt.variant = variant;
        segment_reduce(ctx, g_->index(), roles_[0].view(copy), roles_[1].mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_GATHER_SCATTER: {
        ReduceOptions opt;
        opt.variant = variant;
        gather_scatter(ctx, g_->coo(type_), roles_[0].view(copy), roles_[1].mut(copy), opt);
        break;
      }
      case SPARSEPORT_OP_CSR_ATTENTION: {
        AttentionOptions opt;
        opt.variant = variant;
        csr_attention(ctx, g_->csr(type_), roles_[0].view(copy), roles_[1].view(copy), roles_[2].view(copy),
                      roles_[3].mut(copy), opt);
        break;
      }
      default: throw InvalidArgument(std::string(kProgram) + ": op '" + op_name(op_) + "' is not measured here.");
    }
  }

  // NaN (all bits set, a NaN in every type) in copy 0 of the output.
  void poison_output() const {
    const Role& out = roles_.back();
    cuda_ok(cudaMemsetAsync(out.at(0), 0xff, out.elems() * out.esize, stream_), "cudaMemsetAsync (poison)");
  }

  // Copy 0 of the output as floats (waits for the stream).
  std::vector<float> output(const Context& ctx) const {
    const Role& out = roles_.back();
    std::vector<unsigned char> bytes(out.elems() * out.esize);
    cuda_ok(cudaStreamSynchronize(stream_), "cudaStreamSynchronize (result)");
    if (!bytes.empty()) ctx.copy_to_host(bytes.data(), out.at(0), bytes.size());
    return decode(bytes.data(), out.elems(), type_);
  }

 private:
  // Element p of the rotated buffer gets random_block(seed)[p % 2^20] rounded to the type: the
  // block is uploaded once, then doubled by device-to-device copies.
  void fill(const Context& ctx, const Role& r, size_t n, uint64_t seed) const {
    if (n == 0) return;
    const std::vector<float>& block = random_block(seed);
    size_t filled = std::min(n, block.size());
    const std::vector<unsigned char> head = encode(std::vector<float>(block.begin(), block.begin() + static_cast<std::ptrdiff_t>(filled)), r.type);
    ctx.copy_to_backend(r.buf.data(), head.data(), head.size());
    unsigned char* base = static_cast<unsigned char*>(r.buf.data());
    while (filled < n) {
      const size_t step = std::min(filled, n - filled);
      cuda_ok(cudaMemcpyAsync(base + filled * r.esize, base, step * r.esize, cudaMemcpyDeviceToDevice, stream_),
              "cudaMemcpyAsync (operand fill)");
      filled += step;
    }
  }

  sparseport_op op_;
  ValueType type_;
  std::shared_ptr<const DeviceGraph> g_;
  int copies_;
  cudaStream_t stream_;
  std::vector<Role> roles_;
};

// ---- the traffic model in each value type --------------------------------------------------------

// harness.hpp's compulsory bytes with V bytes per value (4: f32, 2: bf16/f16) and 4-byte indices.
double compulsory_bytes(sparseport_op op, const Graph& g, int64_t features, double V) {
  constexpr double I = 4;
  const double m = static_cast<double>(g.csr.rows), nnz = static_cast<double>(g.csr.nnz());
  const double F = static_cast<double>(features);
  const double r = static_cast<double>(g.nonempty_rows), c = static_cast<double>(g.touched_cols);
  const double csr_bytes = (m + 1) * I + nnz * (I + V);
  double b = 0;
  switch (op) {
    case SPARSEPORT_OP_SPMM: b = csr_bytes + c * F * V + m * F * V; break;
    case SPARSEPORT_OP_SDDMM: b = csr_bytes + r * F * V + c * F * V + nnz * V; break;
    case SPARSEPORT_OP_SEGMENT_REDUCE: b = nnz * I + nnz * F * V + m * F * V; break;
    case SPARSEPORT_OP_GATHER_SCATTER: b = 2 * nnz * I + nnz * V + c * F * V + m * F * V; break;
    case SPARSEPORT_OP_CSR_ATTENTION: b = (m + 1) * I + nnz * I + r * F * V + 2 * c * F * V + m * F * V; break;
    default: throw InvalidArgument(std::string(kProgram) + ": no traffic model for '" + op_name(op) + "'.");
  }
  if (V == 4) {  // must agree with the suites' model (harness.cpp, op_model)
    const double h = op_model(op, g, features).compulsory_bytes;
    if (std::fabs(h - b) > 1e-9 * std::max(h, 1.0))
      throw std::logic_error(std::string(kProgram) + ": the float32 traffic model of " + op_name(op) +
                             " differs from harness.cpp's op_model; update compulsory_bytes().");
  }
  return b;
}

// ---- spmm's float64 reference -------------------------------------------------------------------

// C = A B in float64 from the values the device holds: A's values rounded to t, B's copy 0
// (element (j, f) = the seed's block[(j*F + f) % 2^20] rounded to t).
struct Reference {
  std::vector<double> c;
  double max_abs = 0.0;
};

Reference spmm_reference(const Graph& g, const std::vector<float>& a_values, int64_t F, ValueType t) {
  const HostCsr<int32_t, float>& a = g.csr;
  const std::vector<float> b = rounded(random_block(kSeedCols), t);
  const std::vector<float> av = rounded(a_values, t);
  Reference ref;
  ref.c.assign(static_cast<size_t>(a.rows) * static_cast<size_t>(F), 0.0);
  const int threads = static_cast<int>(std::clamp<unsigned>(std::thread::hardware_concurrency(), 1u, 64u));
  std::vector<double> maxes(static_cast<size_t>(threads), 0.0);
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&, w] {
      double mx = 0.0;
      for (int64_t i = w; i < a.rows; i += threads) {
        double* row = ref.c.data() + static_cast<size_t>(i) * static_cast<size_t>(F);
        for (int32_t e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e) {
          const double v = av[static_cast<size_t>(e)];
          const size_t base = static_cast<size_t>(a.colind[static_cast<size_t>(e)]) * static_cast<size_t>(F);
          for (int64_t f = 0; f < F; ++f) row[f] += v * b[(base + static_cast<size_t>(f)) & (kBlock - 1)];
        }
        for (int64_t f = 0; f < F; ++f) mx = std::max(mx, std::fabs(row[f]));
      }
      maxes[static_cast<size_t>(w)] = mx;
    });
  for (std::thread& th : pool) th.join();
  ref.max_abs = *std::max_element(maxes.begin(), maxes.end());
  return ref;
}

// max |got - ref| / max |ref|; infinity when got holds a NaN or an infinity.
double relative_error(const std::vector<float>& got, const Reference& ref) {
  if (got.size() != ref.c.size()) return std::numeric_limits<double>::infinity();
  double err = 0.0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i];
    if (!std::isfinite(g)) return std::numeric_limits<double>::infinity();
    err = std::max(err, std::fabs(g - ref.c[i]));
  }
  return ref.max_abs > 0 ? err / ref.max_abs : err;
}

// ---- records --------------------------------------------------------------------------------------

struct Record {
  std::string graph, role;
  int64_t rows = 0, cols = 0, nnz = 0;
  std::string op, dtype;
  int64_t features = 0;
  std::string requested;  // "auto" or the variant asked for
  std::string variant;    // what ran (auto: the scheduler's choice; via float32: the float32 variant)
  bool via_known = false, via_f32 = false;
  std::string status = "not_run";  // ok, skipped, error, not_run
  std::string note;
  double median_ms = kNaN, min_ms = kNaN, first_call_ms = kNaN, idle = kNaN;
  int calls = 0, copies = 0;
  double bytes = kNaN, floor_ms = kNaN, floor_frac = kNaN;
  double vs_f32 = kNaN, vs_f32_auto = kNaN, vs_vendor = kNaN, vs_best_cusparse = kNaN;
  std::string vendor, best_cusparse;
  double rel_err = kNaN;
  std::string accuracy_note;
  std::string decision_source, decision_reason;
  double decide_ms = kNaN;
};

std::string key_of(const std::string& graph, const std::string& op, int64_t f, const std::string& dtype,
                   const std::string& requested) {
  return graph + "|" + op + "|" + std::to_string(f) + "|" + dtype + "|" + requested;
}

// The speedups, from the records of the same run (f32 is always measured).
void compute_ratios(std::vector<Record>& recs, const PluginInfo& cuda) {
  std::map<std::string, double> t;
  for (const Record& r : recs)
    if (r.status == "ok") t[key_of(r.graph, r.op, r.features, r.dtype, r.requested)] = r.median_ms;
  const auto get = [&](const Record& r, const std::string& dtype, const std::string& requested) {
    auto it = t.find(key_of(r.graph, r.op, r.features, dtype, requested));
    return it == t.end() ? kNaN : it->second;
  };
  for (Record& r : recs) {
    if (r.status != "ok") continue;
    r.vs_f32 = get(r, "f32", r.requested) / r.median_ms;
    r.vs_f32_auto = get(r, "f32", "auto") / r.median_ms;
    const std::string vendor = cuda.vendor_variant(op_from_name(r.op));
    if (vendor.empty()) continue;
    r.vendor = vendor;
    const double same = get(r, r.dtype, vendor), f32 = get(r, "f32", vendor);
    r.vs_vendor = same / r.median_ms;
    double best = kNaN;
    if (std::isfinite(same) && (!std::isfinite(f32) || same <= f32)) {
      best = same;
      r.best_cusparse = vendor + " " + r.dtype;
    } else if (std::isfinite(f32)) {
      best = f32;
      r.best_cusparse = vendor + " f32 (on float32 copies)";
    }
    r.vs_best_cusparse = best / r.median_ms;
  }
}

// ---- output: JSON -------------------------------------------------------------------------------

std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      o += '\\';
      o += ch;
    } else if (c == '\n') {
      o += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      o += buf;
    } else {
      o += ch;
    }
  }
  return o + "\"";
}

std::string json_num(double v) {
  if (!std::isfinite(v)) return "null";
  std::ostringstream s;
  s << std::setprecision(6) << v;
  return s.str();
}

struct RunInfo {
  std::string command_line, date, device, copy_how, timing, rotation, operands, data_dir;
  double copy_gbps = 0.0, cap_gb = 0.0;
  std::vector<std::string> input_lines;     // "name (role): rows, nnz, loaded in s"
  std::vector<std::string> accuracy_skipped;  // graphs over --accuracy-max-nnz
  std::string large_uniform;
  std::string stopped;  // why the run stopped early ("" when it did not)
  double accuracy_max_nnz = 0.0;
  double elapsed = -1.0;    // seconds; < 0: this process's so far
  std::string merged_from;  // --merge: the files
};

double run_seconds(const RunInfo& info) { return info.elapsed >= 0 ? info.elapsed : elapsed_s(); }

void write_json(const std::string& path, const RunInfo& info, const std::vector<Record>& recs) {
  std::ofstream f(path);
  if (!f) throw InvalidArgument(std::string(kProgram) + ": cannot write '" + path + "'.");
  f << "{\n  \"context\": {\n";
  f << "    \"program\": " << json_str(kProgram) << ",\n";
  f << "    \"sparseport_version\": " << json_str(version()) << ",\n";
  f << "    \"command_line\": " << json_str(info.command_line) << ",\n";
  f << "    \"date\": " << json_str(info.date) << ",\n";
  f << "    \"elapsed_s\": " << json_num(run_seconds(info)) << ",\n";
  f << "    \"device\": " << json_str(info.device) << ",\n";
  f << "    \"copy_GBps\": " << json_num(info.copy_gbps) << ",\n";
  f << "    \"copy_method\": " << json_str(info.copy_how) << ",\n";
  f << "    \"timing\": " << json_str(info.timing) << ",\n";
  f << "    \"rotation\": " << json_str(info.rotation) << ",\n";
  f << "    \"operands\": " << json_str(info.operands) << ",\n";
  f << "    \"operand_cap_GB\": " << json_num(info.cap_gb) << ",\n";
  f << "    \"data_dir\": " << json_str(info.data_dir) << ",\n";
  f << "    \"large_uniform\": " << json_str(info.large_uniform) << ",\n";
  f << "    \"accuracy_max_nnz\": " << json_num(info.accuracy_max_nnz) << ",\n";
  f << "    \"stopped\": " << json_str(info.stopped) << ",\n";
  f << "    \"merged_from\": " << json_str(info.merged_from) << ",\n";
  f << "    \"inputs\": [";
  for (size_t i = 0; i < info.input_lines.size(); ++i) f << (i ? ", " : "") << json_str(info.input_lines[i]);
  f << "],\n    \"accuracy_skipped\": [";
  for (size_t i = 0; i < info.accuracy_skipped.size(); ++i) f << (i ? ", " : "") << json_str(info.accuracy_skipped[i]);
  f << "]\n  },\n  \"rows\": [\n";
  for (size_t i = 0; i < recs.size(); ++i) {
    const Record& r = recs[i];
    f << "    {\"graph\": " << json_str(r.graph) << ", \"role\": " << json_str(r.role) << ", \"rows\": " << r.rows
      << ", \"cols\": " << r.cols << ", \"nnz\": " << r.nnz << ", \"op\": " << json_str(r.op)
      << ", \"dtype\": " << json_str(r.dtype) << ", \"F\": " << r.features
      << ", \"requested\": " << json_str(r.requested) << ", \"variant\": " << json_str(r.variant)
      << ", \"via_f32\": " << (r.via_known ? (r.via_f32 ? "true" : "false") : "null")
      << ", \"status\": " << json_str(r.status) << ", \"note\": " << json_str(r.note)
      << ", \"median_ms\": " << json_num(r.median_ms) << ", \"min_ms\": " << json_num(r.min_ms)
      << ", \"calls\": " << r.calls << ", \"first_call_ms\": " << json_num(r.first_call_ms)
      << ", \"copies\": " << r.copies << ", \"gpu_idle_frac\": " << json_num(r.idle)
      << ", \"compulsory_bytes\": " << json_num(r.bytes) << ", \"floor_ms\": " << json_num(r.floor_ms)
      << ", \"floor_frac\": " << json_num(r.floor_frac) << ", \"speedup_vs_f32\": " << json_num(r.vs_f32)
      << ", \"speedup_vs_f32_auto\": " << json_num(r.vs_f32_auto) << ", \"vendor\": " << json_str(r.vendor)
      << ", \"speedup_vs_vendor\": " << json_num(r.vs_vendor)
      << ", \"speedup_vs_best_cusparse\": " << json_num(r.vs_best_cusparse)
      << ", \"best_cusparse\": " << json_str(r.best_cusparse) << ", \"rel_err\": " << json_num(r.rel_err)
      << ", \"accuracy_note\": " << json_str(r.accuracy_note)
      << ", \"decision_source\": " << json_str(r.decision_source)
      << ", \"decision_reason\": " << json_str(r.decision_reason) << ", \"decide_ms\": " << json_num(r.decide_ms)
      << "}" << (i + 1 < recs.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
  if (!f) throw InvalidArgument(std::string(kProgram) + ": writing '" + path + "' failed.");
}

// ---- output: Markdown ---------------------------------------------------------------------------

std::string fmt(double v, int digits = 2) {
  if (!std::isfinite(v)) return "-";
  std::ostringstream s;
  s << std::fixed << std::setprecision(digits) << v;
  return s.str();
}
std::string fmt_sci(double v) {
  if (std::isinf(v)) return "NaN/inf in result";
  if (!std::isfinite(v)) return "-";
  std::ostringstream s;
  s << std::scientific << std::setprecision(2) << v;
  return s.str();
}

struct Stat {
  double log_sum = 0;
  int n = 0;
  double min = std::numeric_limits<double>::infinity();
  std::string min_at;
  void add(double v, const std::string& at) {
    if (!(v > 0) || !std::isfinite(v)) return;
    log_sum += std::log(v);
    ++n;
    if (v < min) {
      min = v;
      min_at = at;
    }
  }
  double geomean() const { return n > 0 ? std::exp(log_sum / n) : kNaN; }
  std::string min_str() const { return n > 0 ? fmt(min) + "x (" + min_at + ")" : "-"; }
};

std::string via_str(const Record& r) { return !r.via_known ? "?" : r.via_f32 ? "f32 copies" : "native"; }

void write_markdown(const std::string& path, const RunInfo& info, const std::vector<Record>& recs) {
  std::ofstream f(path);
  if (!f) throw InvalidArgument(std::string(kProgram) + ": cannot write '" + path + "'.");
  f << "# 16-bit values on the cuda plugin (" << kProgram << ")\n\n";
  f << "- device: " << info.device << "\n- copy bandwidth: " << fmt(info.copy_gbps, 0) << " GB/s (" << info.copy_how
    << ")\n- SparsePort " << version() << ", " << info.date << ", " << fmt(run_seconds(info), 0) << " s\n- command: `"
    << info.command_line << "`\n";
  if (!info.merged_from.empty()) f << "- merged from: " << info.merged_from << "\n";
  if (!info.stopped.empty()) f << "- **stopped early**: " << info.stopped << "\n";
  f << "\nTimes: " << info.timing << ". Floor: compulsory bytes in the row's value type (indices 4 bytes, "
    << "values 4 or 2) over the copy bandwidth; floor fraction = floor / time. `auto` is the scheduler's choice "
    << "(no variant named); `via f32`: the 16-bit call ran on float32 copies made by the front end "
    << "(Decision::via_f32). Best cuSPARSE user path: the faster of the vendor in the row's value type and the "
    << "vendor in float32 on float32 copies of the operands.\n\n";

  // The value types and ops present, in a fixed order.
  std::vector<std::string> dtypes, ops;
  for (const char* t : {"f32", "bf16", "f16"})
    if (std::any_of(recs.begin(), recs.end(), [&](const Record& r) { return r.dtype == t; })) dtypes.push_back(t);
  for (const char* op : {"spmm", "sddmm", "csr_attention", "segment_reduce", "gather_scatter"})
    if (std::any_of(recs.begin(), recs.end(), [&](const Record& r) { return r.op == op; })) ops.push_back(op);

  // Summary table: the scheduler's choice.
  f << "## Summary: the scheduler's choice, F >= 64\n\n";
  f << "Geomean and min over inputs (graph, F >= 64) of the speedup of `auto` in the value type over `auto` in "
       "float32; for spmm and sddmm the same over the best cuSPARSE user path; the floor fraction on the large "
       "uniform input ("
    << (info.large_uniform.empty() ? "none" : info.large_uniform) << ") per F; how many `auto` rows (any F) ran on "
    << "float32 copies and how many natively; and every input (any F) where the value type is slower than float32. "
    << "`inputs`: the (graph, F >= 64) rows measured.\n\n";
  f << "| op | dtype | inputs | x f32 geomean | x f32 min | x best cuSPARSE geomean | x best cuSPARSE min | "
       "floor frac, large uniform | via f32 / native | slower than f32 |\n";
  f << "|---|---|---:|---:|---|---:|---|---|---|---|\n";
  for (const std::string& op : ops)
    for (const std::string& dt : dtypes) {
      Stat vs32, vscu;
      std::string uniform_ff, slower;
      int via = 0, native = 0, wide = 0;
      for (const Record& r : recs) {
        if (r.op != op || r.dtype != dt || r.requested != "auto" || r.status != "ok") continue;
        const std::string at = r.graph + "@" + std::to_string(r.features);
        if (r.via_known) (r.via_f32 ? via : native)++;
        if (r.role == "large uniform" && r.features >= 64)
          uniform_ff += (uniform_ff.empty() ? "" : ", ") + std::string("F=") + std::to_string(r.features) + ": " +
                        fmt(r.floor_frac);
        if (dt != "f32" && std::isfinite(r.vs_f32) && r.vs_f32 < 1.0)
          slower += (slower.empty() ? "" : ", ") + at + " (" + fmt(r.vs_f32) + "x)";
        if (r.features < 64) continue;
        ++wide;
        if (dt != "f32") vs32.add(r.vs_f32, at);
        vscu.add(r.vs_best_cusparse, at);
      }
      const bool vendor = op == "spmm" || op == "sddmm";
      f << "| " << op << " | " << dt << " | " << wide << " | "
        << (dt == "f32" ? "1 (ref.)" : fmt(vs32.geomean())) << " | " << (dt == "f32" ? "-" : vs32.min_str()) << " | "
        << (vendor ? fmt(vscu.geomean()) : "-") << " | " << (vendor ? vscu.min_str() : "-") << " | "
        << (uniform_ff.empty() ? "-" : uniform_ff) << " | "
        << (dt == "f32" ? std::string("-") : std::to_string(via) + " / " + std::to_string(native)) << " | "
        << (dt == "f32" ? "-" : slower.empty() ? "none" : slower) << " |\n";
    }

  // spmm per input: auto, vendor, accuracy.
  if (std::find(ops.begin(), ops.end(), "spmm") != ops.end()) {
    f << "\n## spmm per input (the scheduler's choice)\n\n";
    f << "Error: max |C - C_ref| / max |C_ref| against a float64 host reference from the same (rounded) inputs; "
         "graphs over "
      << fmt(info.accuracy_max_nnz, 0) << " entries are not checked";
    if (!info.accuracy_skipped.empty()) {
      f << " (";
      for (size_t i = 0; i < info.accuracy_skipped.size(); ++i) f << (i ? ", " : "") << info.accuracy_skipped[i];
      f << ")";
    }
    f << ".\n\n| graph | nnz | F | dtype | variant | path | ms | floor frac | x f32 | x cuSPARSE same dtype | x best "
         "cuSPARSE | error |\n|---|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|\n";
    for (const Record& r : recs) {
      if (r.op != "spmm" || r.requested != "auto") continue;
      if (r.status != "ok") {
        f << "| " << r.graph << " | " << r.nnz << " | " << r.features << " | " << r.dtype << " | " << r.status << ": "
          << r.note << " | | | | | | | |\n";
        continue;
      }
      f << "| " << r.graph << " | " << r.nnz << " | " << r.features << " | " << r.dtype << " | " << r.variant << " | "
        << via_str(r) << " | " << fmt(r.median_ms, 4) << " | " << fmt(r.floor_frac) << " | "
        << (r.dtype == "f32" ? "-" : fmt(r.vs_f32)) << " | " << fmt(r.vs_vendor) << " | " << fmt(r.vs_best_cusparse)
        << " | " << (std::isnan(r.rel_err) ? "-" : fmt_sci(r.rel_err)) << " |\n";
    }

    // Every spmm variant: 16 bits over its own float32, and its worst error.
    f << "\n## spmm variants by name\n\nPer variant and value type: inputs where it ran, how it ran (native 16-bit / "
         "float32 copies), geomean speedup over the same variant in float32 and over the best cuSPARSE user path "
         "(F >= 64), and the largest error seen.\n\n";
    f << "| variant | dtype | ran | native / via f32 | x own f32 geomean | x best cuSPARSE geomean | max error |\n"
         "|---|---|---:|---|---:|---:|---:|\n";
    std::vector<std::string> variants;
    for (const Record& r : recs)
      if (r.op == "spmm" && std::find(variants.begin(), variants.end(), r.requested) == variants.end())
        variants.push_back(r.requested);
    for (const std::string& v : variants)
      for (const std::string& dt : dtypes) {
        Stat own, cu;
        int ran = 0, nat = 0, via = 0;
        double worst = kNaN;
        for (const Record& r : recs) {
          if (r.op != "spmm" || r.requested != v || r.dtype != dt || r.status != "ok") continue;
          ++ran;
          if (r.via_known) (r.via_f32 ? via : nat)++;
          if (!std::isnan(r.rel_err)) worst = std::isnan(worst) ? r.rel_err : std::max(worst, r.rel_err);
          if (r.features < 64) continue;
          own.add(r.vs_f32, r.graph);
          cu.add(r.vs_best_cusparse, r.graph);
        }
        if (ran == 0) continue;
        f << "| " << v << " | " << dt << " | " << ran << " | " << nat << " / " << via << " | "
          << (dt == "f32" ? "-" : fmt(own.geomean())) << " | " << fmt(cu.geomean()) << " | "
          << (std::isnan(worst) ? "-" : fmt_sci(worst)) << " |\n";
      }
  }

  // What did not run.
  std::map<std::string, int> reasons;
  int not_ok = 0;
  for (const Record& r : recs)
    if (r.status != "ok") {
      ++not_ok;
      std::string why = r.note.substr(0, 160);
      reasons[r.status + ": " + (r.requested == "auto" ? "" : r.requested + ": ") + why]++;
    }
  f << "\n## Rows not measured (" << not_ok << " of " << recs.size() << ")\n\n";
  if (reasons.empty()) f << "none\n";
  for (const auto& [why, n] : reasons) f << "- " << n << " x " << why << "\n";
  f << "\n## Inputs\n\n";
  for (const std::string& l : info.input_lines) f << "- " << l << "\n";
  if (!f) throw InvalidArgument(std::string(kProgram) + ": writing '" + path + "' failed.");
}

// ---- --merge: reading earlier outputs back ------------------------------------------------------

// Just enough JSON for the files write_json writes: objects, arrays, strings (with the escapes it
// writes, \uXXXX below 0x80 only), numbers, true, false, null.
struct Json {
  enum class Kind { null, boolean, number, string, array, object } kind = Kind::null;
  bool boolean = false;
  double number = kNaN;
  std::string text;
  std::vector<Json> items;       // array elements, or object values
  std::vector<std::string> keys; // object keys, one per item
  const Json* find(const std::string& k) const {
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] == k) return &items[i];
    return nullptr;
  }
  std::string str(const std::string& k) const {
    const Json* v = find(k);
    return v != nullptr && v->kind == Kind::string ? v->text : std::string();
  }
  double num(const std::string& k) const {
    const Json* v = find(k);
    return v != nullptr && v->kind == Kind::number ? v->number : kNaN;
  }
};

class JsonReader {
 public:
  JsonReader(const std::string& text, std::string where) : t_(text), where_(std::move(where)) {}
  Json document() {
    Json v = value();
    space();
    if (p_ != t_.size()) fail("text after the document");
    return v;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidArgument(std::string(kProgram) + ": " + where_ + ": " + what + " at offset " + std::to_string(p_) + ".");
  }
  void space() {
    while (p_ < t_.size() && (t_[p_] == ' ' || t_[p_] == '\n' || t_[p_] == '\r' || t_[p_] == '\t')) ++p_;
  }
  bool eat(char c) {
    space();
    if (p_ < t_.size() && t_[p_] == c) {
      ++p_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!eat(c)) fail(std::string("expected '") + c + "'");
  }
  std::string string_body() {
    expect('"');
    std::string out;
    while (true) {
      if (p_ >= t_.size()) fail("unterminated string");
      const char c = t_[p_++];
      if (c == '"') return out;
      if (c != '\\') {
        out += c;
        continue;
      }
      if (p_ >= t_.size()) fail("unterminated escape");
      const char e = t_[p_++];
      if (e == 'n') {
        out += '\n';
      } else if (e == 't') {
        out += '\t';
      } else if (e == 'u') {
        if (p_ + 4 > t_.size()) fail("short \\u escape");
        const unsigned long code = std::strtoul(t_.substr(p_, 4).c_str(), nullptr, 16);
        p_ += 4;
        out += code < 0x80 ? static_cast<char>(code) : '?';
      } else {
        out += e;  // \" \\ \/
      }
    }
  }
  Json value() {
    space();
    if (p_ >= t_.size()) fail("unexpected end");
    Json v;
    const char c = t_[p_];
    if (c == '{') {
      ++p_;
      v.kind = Json::Kind::object;
      if (eat('}')) return v;
      do {
        space();
        v.keys.push_back(string_body());
        expect(':');
        v.items.push_back(value());
      } while (eat(','));
      expect('}');
    } else if (c == '[') {
      ++p_;
      v.kind = Json::Kind::array;
      if (eat(']')) return v;
      do v.items.push_back(value());
      while (eat(','));
      expect(']');
    } else if (c == '"') {
      v.kind = Json::Kind::string;
      v.text = string_body();
    } else if (t_.compare(p_, 4, "null") == 0) {
      p_ += 4;
    } else if (t_.compare(p_, 4, "true") == 0) {
      p_ += 4;
      v.kind = Json::Kind::boolean;
      v.boolean = true;
    } else if (t_.compare(p_, 5, "false") == 0) {
      p_ += 5;
      v.kind = Json::Kind::boolean;
    } else {
      const char* first = t_.c_str() + p_;
      char* end = nullptr;
      v.number = std::strtod(first, &end);
      if (end == first) fail("unexpected character");
      v.kind = Json::Kind::number;
      p_ += static_cast<size_t>(end - first);
    }
    return v;
  }

  const std::string& t_;
  std::string where_;
  size_t p_ = 0;
};

Record record_from(const Json& o) {
  Record r;
  r.graph = o.str("graph");
  r.role = o.str("role");
  r.rows = static_cast<int64_t>(o.num("rows"));
  r.cols = static_cast<int64_t>(o.num("cols"));
  r.nnz = static_cast<int64_t>(o.num("nnz"));
  r.op = o.str("op");
  r.dtype = o.str("dtype");
  r.features = static_cast<int64_t>(o.num("F"));
  r.requested = o.str("requested");
  r.variant = o.str("variant");
  if (const Json* v = o.find("via_f32"); v != nullptr && v->kind == Json::Kind::boolean) {
    r.via_known = true;
    r.via_f32 = v->boolean;
  }
  r.status = o.str("status");
  r.note = o.str("note");
  r.median_ms = o.num("median_ms");
  r.min_ms = o.num("min_ms");
  r.calls = static_cast<int>(std::isfinite(o.num("calls")) ? o.num("calls") : 0);
  r.first_call_ms = o.num("first_call_ms");
  r.copies = static_cast<int>(std::isfinite(o.num("copies")) ? o.num("copies") : 0);
  r.idle = o.num("gpu_idle_frac");
  r.bytes = o.num("compulsory_bytes");
  r.floor_ms = o.num("floor_ms");
  r.floor_frac = o.num("floor_frac");
  r.rel_err = o.num("rel_err");
  r.accuracy_note = o.str("accuracy_note");
  if (r.accuracy_note == "NaN or infinity in the result") r.rel_err = std::numeric_limits<double>::infinity();
  r.decision_source = o.str("decision_source");
  r.decision_reason = o.str("decision_reason");
  r.decide_ms = o.num("decide_ms");
  return r;
}

void add_unique(std::vector<std::string>& to, const std::string& s) {
  if (!s.empty() && std::find(to.begin(), to.end(), s) == to.end()) to.push_back(s);
}

// --merge: the rows of every file (a row measured twice keeps the later file's, unless only the
// earlier one was measured), the contexts combined, the ratios recomputed across the files.
int merge_outputs(const Options& o, const std::string& command_line) {
  RunInfo info;
  std::vector<Record> recs;
  std::map<std::string, size_t> at;
  double elapsed = 0.0;
  for (const std::string& file : o.merge) {
    std::ifstream in(file);
    if (!in) throw InvalidArgument(std::string(kProgram) + ": cannot read '" + file + "'.");
    std::stringstream buf;
    buf << in.rdbuf();
    const std::string text = buf.str();
    const Json doc = JsonReader(text, file).document();
    const Json* ctx = doc.find("context");
    const Json* rows = doc.find("rows");
    if (ctx == nullptr || rows == nullptr || rows->kind != Json::Kind::array)
      throw InvalidArgument(std::string(kProgram) + ": '" + file + "' is not an output of " + kProgram + ".");
    const auto first = [&](std::string& field, const char* key) {
      if (field.empty()) field = ctx->str(key);
    };
    first(info.date, "date");
    first(info.device, "device");
    first(info.copy_how, "copy_method");
    first(info.timing, "timing");
    first(info.rotation, "rotation");
    first(info.operands, "operands");
    first(info.data_dir, "data_dir");
    first(info.large_uniform, "large_uniform");
    if (info.copy_gbps <= 0) info.copy_gbps = ctx->num("copy_GBps");
    if (info.cap_gb <= 0) info.cap_gb = ctx->num("operand_cap_GB");
    info.accuracy_max_nnz = std::max(info.accuracy_max_nnz, std::isfinite(ctx->num("accuracy_max_nnz")) ? ctx->num("accuracy_max_nnz") : 0.0);
    if (std::isfinite(ctx->num("elapsed_s"))) elapsed += ctx->num("elapsed_s");
    if (!ctx->str("stopped").empty()) info.stopped += (info.stopped.empty() ? "" : "; ") + file + ": " + ctx->str("stopped");
    info.merged_from += (info.merged_from.empty() ? "" : ", ") + file + " (`" + ctx->str("command_line") + "`)";
    for (const char* key : {"inputs", "accuracy_skipped"})
      if (const Json* list = ctx->find(key); list != nullptr)
        for (const Json& item : list->items)
          add_unique(std::string(key) == "inputs" ? info.input_lines : info.accuracy_skipped, item.text);
    for (const Json& row : rows->items) {
      Record r = record_from(row);
      const std::string key = key_of(r.graph, r.op, r.features, r.dtype, r.requested);
      if (auto it = at.find(key); it != at.end()) {
        if (r.status == "ok" || recs[it->second].status != "ok") recs[it->second] = std::move(r);
      } else {
        at.emplace(key, recs.size());
        recs.push_back(std::move(r));
      }
    }
  }
  info.command_line = command_line;
  info.elapsed = elapsed;
  compute_ratios(recs, plugin("cuda"));
  write_json(o.out_prefix + ".json", info, recs);
  write_markdown(o.out_prefix + ".md", info, recs);
  std::cout << kProgram << ": merged " << o.merge.size() << " files, " << recs.size() << " rows, into "
            << o.out_prefix << ".json and " << o.out_prefix << ".md\n";
  return 0;
}

// ---- the run ------------------------------------------------------------------------------------

struct Suite {
  Options opt;
  const PluginInfo* cuda = nullptr;
  std::unique_ptr<Context> ctx;
  cudaStream_t stream = nullptr;
  DeviceFacts facts;
  std::unique_ptr<EventTimer> timer;
  double copy_gbps = 0.0;
  double cap_bytes = 0.0;
  int64_t rotate_target = 0, rotate_cap = 0;
  // A tiny float32 spmm whose call, after clear_plan_memo(), replaces the thread's last plan (and
  // with it the float32 copies a 16-bit plan held), so last_decision() names the next row's plan.
  Buffer tiny_rowptr, tiny_colind, tiny_values, tiny_b, tiny_c;
  std::vector<Record> records;
  RunInfo info;
};

void forget_plans(Suite& s) {
  clear_plan_memo();
  try {
    const CsrView a = make_csr<int32_t, float>(8, 8, 8, static_cast<const int32_t*>(s.tiny_rowptr.data()),
                                               static_cast<const int32_t*>(s.tiny_colind.data()),
                                               static_cast<const float*>(s.tiny_values.data()));
    spmm(*s.ctx, a, make_dense<float>(8, 4, 4, static_cast<const float*>(s.tiny_b.data())),
         make_dense<float>(8, 4, 4, static_cast<float*>(s.tiny_c.data())));
    s.ctx->synchronize();
  } catch (const DeviceFault&) {
    throw;
  } catch (const std::exception&) {  // only bookkeeping: the next row's own call sets the decision
  }
  clear_plan_memo();
}

void make_tiny(Suite& s) {
  std::vector<int32_t> rowptr(9), colind(8);
  std::iota(rowptr.begin(), rowptr.end(), 0);
  std::iota(colind.begin(), colind.end(), 0);
  const std::vector<float> ones(32, 1.0f);
  s.tiny_rowptr = upload(*s.ctx, rowptr.data(), rowptr.size());
  s.tiny_colind = upload(*s.ctx, colind.data(), colind.size());
  s.tiny_values = upload(*s.ctx, ones.data(), 8);
  s.tiny_b = upload(*s.ctx, ones.data(), 32);
  s.tiny_c = upload(*s.ctx, ones.data(), 32);
}

// Whether the plugin flags the variant as taking 16-bit values itself (SPARSEPORT_VARIANT_VALUES16).
bool takes16(const PluginInfo* cuda, sparseport_op op, const std::string& variant) {
  for (const VariantInfo& v : cuda->variants)
    if (v.op == op && v.name == variant) return v.values16;
  return false;
}

bool past_deadline(const Suite& s) { return s.opt.deadline_s > 0 && elapsed_s() > s.opt.deadline_s; }

// One row: warm-ups, the check against the reference (when given) on copy 0, then the timed calls.
// Fills r; throws DeviceFault (the context is gone) and nothing else.
// cuSPARSE's own 16-bit SpMM/SpMV carries partial sums in 16 bits (the plugin refuses it for 16-bit
// calls and serves them on float32 copies); its row here, named, measures that path as what a
// cuSPARSE user gets (SPARSEPORT_CUSPARSE16=1 for that row only, so the scheduler never sees it).
struct Cusparse16Scope {
  explicit Cusparse16Scope(const std::string& variant)
      : on(variant == "spmm.cusparse" || variant == "spmm.cusparse_spmv") {
    if (on) setenv("SPARSEPORT_CUSPARSE16", "1", 1);
  }
  ~Cusparse16Scope() {
    if (on) unsetenv("SPARSEPORT_CUSPARSE16");
  }
  bool on;
};

void measure_row(Suite& s, const OpCase& c, const RowSpec& row, const Reference* ref, Record& r) {
  const Options& o = s.opt;
  const Context& ctx = *s.ctx;
  const bool v16 = is_16bit(row.dtype);
  const Cusparse16Scope cusparse16(row.requested);
  int next = 0;
  const auto call_next = [&] {
    next = (next + 1) % c.copies();  // copy 0, the warm-up's, comes last
    c.run(ctx, row.requested, next);
  };
  try {
    forget_plans(s);
    c.poison_output();
    ctx.synchronize();
    auto t0 = Clock::now();
    c.run(ctx, row.requested, 0);
    ctx.synchronize();
    const double first = std::chrono::duration<double>(Clock::now() - t0).count();
    r.first_call_ms = first * 1e3;
    if (!row.requested.empty()) {
      r.variant = row.requested;
      r.via_known = true;
      // A named variant that does not take 16-bit values (VariantInfo::values16), or does not
      // apply to this input natively, runs through the front end's float32 path, whose plan
      // (via_f32 set) becomes the thread's last decision; a native call leaves a decision with
      // via_f32 unset there (the direct call's, or forget_plans()'s float32 plan in libraries
      // before last_decision() named directly-run variants). Only the flag is read.
      r.via_f32 = v16 && (!takes16(s.cuda, row.op, row.requested) || last_decision().via_f32);
    }
    // A second untimed call tells the planning (first call) from a slow kernel, unless the first
    // call of a named variant alone took longer than a slow row's budget (the scheduler's choice
    // always gets it: its first call includes the decision).
    double probe = first;
    int warm = 1;
    if (!row.requested.empty() && first > o.max_row_s) {
      r.note = "first call " + fmt(first * 1e3, 0) + " ms";
    } else {
      t0 = Clock::now();
      call_next();
      ctx.synchronize();
      probe = std::chrono::duration<double>(Clock::now() - t0).count();
      warm = 2;
    }
    const bool slow = probe * o.min_calls > o.max_row_s;
    for (; warm < o.warmups && !slow; ++warm) call_next();
    ctx.synchronize();
    if (ref != nullptr) {
      // After the warm-ups, so the scheduler's choice is settled (its first call may also have run
      // the other path while deciding): one more call on copy 0, poisoned first.
      c.poison_output();
      c.run(ctx, row.requested, 0);
      r.rel_err = relative_error(c.output(ctx), *ref);
      if (std::isinf(r.rel_err)) r.accuracy_note = "NaN or infinity in the result";
    }
    if (row.requested.empty()) {
      const Decision d = last_decision();
      r.variant = d.variant.empty() ? "?" : d.variant;
      r.via_known = true;
      r.via_f32 = d.via_f32;
      r.decision_source = d.source;
      r.decision_reason = d.reason;
      r.decide_ms = d.decide_seconds * 1e3;
    }
    CallCost cost;
    double idle = 0.0;
    std::vector<double> times;
    if (slow) {
      const int n = static_cast<int>(std::clamp<double>(std::floor(o.max_row_s / std::max(probe, 1e-9)), 1, o.min_calls));
      times = s.timer->time_calls(n, call_next, cost, &idle);
      r.note += std::string(r.note.empty() ? "" : "; ") + "slow calls (" + fmt(probe * 1e3, 1) + " ms untimed): " +
                std::to_string(warm) + " warm-up" + (warm > 1 ? "s" : "") + " and " + std::to_string(n) +
                " timed call" + (n > 1 ? "s" : "");
    } else {
      times = s.timer->time_calls(o.min_calls, call_next, cost, &idle);
      double total = std::accumulate(times.begin(), times.end(), 0.0);
      while (total < o.min_ms * 1e-3 && static_cast<int>(times.size()) < o.max_calls) {
        const double per = std::max(median(times), 1e-7);
        const int more = static_cast<int>(std::clamp<double>(std::ceil((o.min_ms * 1e-3 - total) / per), 1,
                                                             o.max_calls - static_cast<int>(times.size())));
        double idle2 = 0.0;
        const std::vector<double> extra = s.timer->time_calls(more, call_next, cost, &idle2);
        times.insert(times.end(), extra.begin(), extra.end());
        total = std::accumulate(times.begin(), times.end(), 0.0);
        idle = std::max(idle, idle2);
      }
    }
    if (row.requested.empty()) {
      const Decision d = last_decision();
      if ((d.variant.empty() ? "?" : d.variant) != r.variant || d.via_f32 != r.via_f32)
        r.note += std::string(r.note.empty() ? "" : "; ") + "the decision changed while timing, now " + d.variant +
                  (d.via_f32 ? " via f32" : "");
    }
    r.median_ms = median(times) * 1e3;
    r.min_ms = *std::min_element(times.begin(), times.end()) * 1e3;
    r.calls = static_cast<int>(times.size());
    r.idle = idle;
    r.floor_frac = r.floor_ms / r.median_ms;
    r.status = "ok";
  } catch (const DeviceFault&) {
    throw;
  } catch (const Unsupported& ex) {
    r.status = "skipped";
    r.note = std::string("does not apply: ") + ex.what();
  } catch (const OutOfMemory& ex) {
    r.status = "skipped";
    r.note = std::string("out of device memory: ") + ex.what();
  } catch (const std::exception& ex) {
    r.status = "error";
    r.note = ex.what();
  }
  try {
    ctx.synchronize();
  } catch (const DeviceFault&) {
    throw;
  } catch (const std::exception&) {  // already recorded by the row
  }
}

Record base_record(const Input& in, const Graph* g, const RowSpec& row) {
  Record r;
  r.graph = in.spec.name;
  r.role = in.role;
  if (g != nullptr) {
    r.rows = g->csr.rows;
    r.cols = g->csr.cols;
    r.nnz = g->csr.nnz();
  }
  r.op = op_name(row.op);
  r.dtype = name(row.dtype);
  r.features = row.features;
  r.requested = shown(row.requested);
  return r;
}

void write_outputs(Suite& s, const PluginInfo& cuda) {
  std::vector<Record> recs = s.records;
  compute_ratios(recs, cuda);
  write_json(s.opt.out_prefix + ".json", s.info, recs);
  write_markdown(s.opt.out_prefix + ".md", s.info, recs);
}

void run_input(Suite& s, const PluginInfo& cuda, const Input& in) {
  const std::vector<RowSpec> rows = rows_of(cuda, s.opt);
  const auto mark_all = [&](const Graph* g, const std::string& status, const std::string& note) {
    for (const RowSpec& row : rows) {
      Record r = base_record(in, g, row);
      r.status = status;
      r.note = note;
      s.records.push_back(std::move(r));
    }
  };
  if (past_deadline(s)) {
    mark_all(nullptr, "not_run", "the --deadline was reached");
    return;
  }
  std::shared_ptr<const Graph> g;
  try {
    std::cout << kProgram << ": loading " << in.spec.name << " ..." << std::flush;
    g = load(in.spec);
    std::cout << " " << g->csr.rows << " rows, " << g->csr.nnz() << " entries, " << fmt(g->load_seconds, 1) << " s\n";
  } catch (const std::exception& ex) {
    std::cout << " failed\n";
    mark_all(nullptr, "error", ex.what());
    s.info.input_lines.push_back(in.spec.name + " (" + in.role + "): failed to load: " + ex.what());
    return;
  }
  s.info.input_lines.push_back(in.spec.name + " (" + in.role + "): " + std::to_string(g->csr.rows) + " rows, " +
                               std::to_string(g->csr.nnz()) + " entries, loaded in " + fmt(g->load_seconds, 1) + " s");
  const bool check = static_cast<double>(g->csr.nnz()) <= s.opt.accuracy_max_nnz;
  if (!check) s.info.accuracy_skipped.push_back(in.spec.name + " (" + std::to_string(g->csr.nnz()) + " entries)");
  std::shared_ptr<const DeviceGraph> dg;
  try {
    dg = std::make_shared<const DeviceGraph>(*s.ctx, g, s.opt.dtypes);
  } catch (const DeviceFault&) {
    throw;
  } catch (const std::exception& ex) {
    mark_all(g.get(), "error", std::string("uploading the graph failed: ") + ex.what());
    return;
  }

  // Rows in groups of one (F, value type, op): one set of operands each.
  size_t i = 0;
  while (i < rows.size()) {
    size_t j = i;
    while (j < rows.size() && rows[j].op == rows[i].op && rows[j].dtype == rows[i].dtype &&
           rows[j].features == rows[i].features)
      ++j;
    const RowSpec& head = rows[i];
    const double V = static_cast<double>(size_of(head.dtype));
    const double bytes = compulsory_bytes(head.op, *g, head.features, V);
    const int64_t one = set_bytes(head.op, *g, head.features, head.dtype);
    // A 16-bit call may run on float32 copies (the scheduler times that path too): room for them.
    const double via_bytes = is_16bit(head.dtype)
                                 ? static_cast<double>(set_bytes(head.op, *g, head.features, ValueType::f32)) +
                                       4.0 * static_cast<double>(g->csr.nnz())
                                 : 0.0;
    std::string group_skip;
    if (static_cast<double>(one) + via_bytes > s.cap_bytes) {
      std::ostringstream m;
      m << "skipped: the dense operands need " << fmt((static_cast<double>(one) + via_bytes) / 1e9, 1)
        << " GB of device memory (float32 copies included), over the cap of " << fmt(s.cap_bytes / 1e9, 1)
        << " GB (--max-gb)";
      group_skip = m.str();
    }
    std::unique_ptr<OpCase> c;
    std::unique_ptr<Reference> ref;
    if (group_skip.empty() && !past_deadline(s)) {
      try {
        int64_t copies = 1;
        if (one > 0 && one < s.rotate_target) {
          copies = (s.rotate_target + one - 1) / one;
          const double room = std::min<double>(static_cast<double>(s.rotate_cap), s.cap_bytes - via_bytes);
          copies = std::clamp<int64_t>(std::min<int64_t>(copies, static_cast<int64_t>(room / static_cast<double>(one))),
                                       1, 1024);
        }
        c = std::make_unique<OpCase>(*s.ctx, s.stream, head.op, dg, head.features, head.dtype,
                                     static_cast<int>(copies));
        if (check && head.op == SPARSEPORT_OP_SPMM)
          ref = std::make_unique<Reference>(spmm_reference(*g, dg->values32, head.features, head.dtype));
      } catch (const DeviceFault&) {
        throw;
      } catch (const OutOfMemory& ex) {
        group_skip = std::string("skipped: out of device memory building the operands: ") + ex.what();
      } catch (const std::exception& ex) {
        group_skip = std::string("error: building the operands failed: ") + ex.what();
      }
    }
    for (size_t k = i; k < j; ++k) {
      Record r = base_record(in, g.get(), rows[k]);
      r.bytes = bytes;
      r.floor_ms = bytes / (s.copy_gbps * 1e9) * 1e3;
      if (!group_skip.empty()) {
        r.status = group_skip.rfind("error", 0) == 0 ? "error" : "skipped";
        r.note = group_skip;
      } else if (past_deadline(s) || c == nullptr) {
        r.status = "not_run";
        r.note = "the --deadline was reached";
      } else {
        r.copies = c->copies();
        measure_row(s, *c, rows[k], ref.get(), r);
        if (ref == nullptr && head.op == SPARSEPORT_OP_SPMM) r.accuracy_note = "not checked: over --accuracy-max-nnz";
      }
      std::cout << "  " << r.op << " " << r.dtype << " F=" << r.features << " " << r.requested << ": "
                << (r.status == "ok" ? fmt(r.median_ms, 4) + " ms (" + r.variant + (r.via_f32 ? ", via f32" : "") +
                                           ", floor frac " + fmt(r.floor_frac) + ")"
                                     : r.status + " " + r.note.substr(0, 120))
                << "\n";
      s.records.push_back(std::move(r));
    }
    c.reset();
    forget_plans(s);
    i = j;
  }
  dg.reset();
  forget_plans(s);
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

int real_main(int argc, char** argv) {
  std::string command_line;
  for (int i = 0; i < argc; ++i) command_line += (i ? " " : "") + std::string(argv[i]);
  const Options opt = parse_args(argc, argv);
  if (opt.help) {
    std::cout << usage();
    return 0;
  }
  if (!opt.merge.empty()) return merge_outputs(opt, command_line);
  const PluginInfo& cuda = plugin("cuda");
  const std::vector<Input> ins = inputs(opt);
  const std::vector<RowSpec> rows = rows_of(cuda, opt);
  if (opt.list) {
    std::cout << "# graph\trole\top\tdtype\tF\tvariant (auto: the scheduler's choice)\t16-bit values "
                 "(native: the variant is flagged values16; f32 copies: it runs on float32 copies)\n";
    for (const Input& in : ins)
      for (const RowSpec& r : rows)
        std::cout << in.spec.name << "\t" << in.role << "\t" << op_name(r.op) << "\t" << name(r.dtype) << "\t"
                  << r.features << "\t" << shown(r.requested) << "\t"
                  << (!is_16bit(r.dtype) || r.requested.empty() ? "-"
                      : takes16(&cuda, r.op, r.requested) ? "native" : "f32 copies")
                  << "\n";
    std::cout << "# " << ins.size() * rows.size() << " rows: " << ins.size() << " inputs x " << rows.size()
              << " rows each (variants that do not apply to an input are recorded as skipped)\n";
    return 0;
  }
  if (cuda.status != PluginStatus::available) {
    std::cout << "no CUDA device: nothing to measure (the cuda backend is " << name(cuda.status)
              << (cuda.reason.empty() ? "" : ": " + cuda.reason) << ")\n";
    return 0;
  }
  if (ins.empty()) {
    std::cerr << kProgram << ": no input matches --graphs '" << opt.graph_regex << "'.\n";
    return 1;
  }

  auto suite = std::make_unique<Suite>();
  Suite& s = *suite;
  s.opt = opt;
  s.cuda = &cuda;
  s.ctx = std::make_unique<Context>(Context::create("cuda:0"));
  cuda_ok(cudaSetDevice(s.ctx->device()), "cudaSetDevice");
  s.stream = static_cast<cudaStream_t>(sparseport_cuda_stream(s.ctx->exec().state));
  if (s.stream == nullptr) throw PluginError(std::string(kProgram) + ": the cuda context has no stream.");
  s.facts = device_facts(*s.ctx);
  if (opt.copy_gbps > 0) {
    s.copy_gbps = opt.copy_gbps;
    s.info.copy_how = "given by --copy-gbps";
  } else {
    const CopyBandwidth bw = measure_device_copy_bandwidth(*s.ctx, s.stream, s.facts.l2_bytes);
    s.copy_gbps = bw.gbps;
    s.info.copy_how = bw.how;
  }
  s.timer = std::make_unique<EventTimer>(*s.ctx, s.stream);
  make_tiny(s);
  cuda_ok(cudaMemGetInfo(&s.facts.free_bytes, &s.facts.total_bytes), "cudaMemGetInfo");
  s.cap_bytes = opt.max_gb > 0 ? opt.max_gb * 1e9 : 0.7 * static_cast<double>(s.facts.free_bytes);
  s.rotate_target = static_cast<int64_t>(opt.rotate_l2 * static_cast<double>(s.facts.l2_bytes));
  s.rotate_cap = std::min<int64_t>(int64_t{4} << 30, static_cast<int64_t>(s.cap_bytes));

  RunInfo& info = s.info;
  info.command_line = command_line;
  info.date = utc_now();
  info.copy_gbps = s.copy_gbps;
  info.cap_gb = s.cap_bytes / 1e9;
  info.data_dir = opt.data_dir;
  info.accuracy_max_nnz = opt.accuracy_max_nnz;
  for (const Input& in : ins)
    if (in.role == "large uniform") info.large_uniform = in.spec.name;
  {
    std::ostringstream d;
    d << s.facts.name << ", " << s.facts.sms << " SMs, L2 " << s.facts.l2_bytes / 1024 << " KiB, "
      << s.facts.total_bytes / (1 << 20) << " MiB (" << s.facts.free_bytes / (1 << 20) << " MiB free after set-up)";
    if (!s.facts.describe.empty()) d << "; " << s.facts.describe;
    info.device = d.str();
    std::ostringstream t;
    t << "median per call of CUDA event pairs on the context's stream, batches of " << EventTimer::kBatch
      << " behind device-to-device ballast (" << fmt(s.timer->ballast_unit_seconds() * 1e6, 1) << " us per unit); "
      << opt.warmups << " untimed warm-ups, then at least " << opt.min_calls << " calls and " << fmt(opt.min_ms, 0)
      << " ms of GPU time (at most " << opt.max_calls << " calls); calls over " << fmt(opt.max_row_s * 1e3 / opt.min_calls, 0)
      << " ms: 2 warm-ups and at most " << fmt(opt.max_row_s, 1) << " s of calls";
    info.timing = t.str();
    std::ostringstream r;
    r << "dense operands and output in n copies, n = ceil(" << opt.rotate_l2 << " x L2 / one copy), 1 <= n <= 1024, "
      << "n x one copy <= " << s.rotate_cap / (1 << 20) << " MiB; each call takes the next copy; the graph's arrays one copy";
    info.rotation = r.str();
    info.operands =
        "A's values uniform in [-1, 1) (seed 17), dense operands uniform in [-1, 1) (seeds 11-14, a 2^20-element block "
        "replicated); 16-bit types hold the same float32 numbers rounded to nearest even; outputs start as NaN";
  }
  std::cout << kProgram << ": " << info.device << "\n  copy bandwidth " << fmt(s.copy_gbps, 0) << " GB/s, "
            << ins.size() << " inputs x " << rows.size() << " rows, operand cap " << fmt(info.cap_gb, 1) << " GB\n";

  try {
    for (const Input& in : ins) {
      run_input(s, cuda, in);
      write_outputs(s, cuda);
    }
  } catch (const DeviceFault& ex) {
    info.stopped = std::string("a device fault ended the run (the context is unusable): ") + ex.what();
    std::cerr << kProgram << ": " << info.stopped << "\n";
    write_outputs(s, cuda);
    return 2;
  } catch (const std::exception& ex) {
    info.stopped = std::string("an error ended the run: ") + ex.what();
    std::cerr << kProgram << ": " << info.stopped << "\n";
    write_outputs(s, cuda);
    return 2;
  }
  if (past_deadline(s)) info.stopped = "the --deadline (" + fmt(opt.deadline_s, 0) + " s) was reached; later rows are not_run";
  write_outputs(s, cuda);
  std::cout << kProgram << ": wrote " << opt.out_prefix << ".json and " << opt.out_prefix << ".md ("
            << s.records.size() << " rows, " << fmt(elapsed_s(), 0) << " s)\n";
  s.records.clear();
  s.timer.reset();
  s.tiny_rowptr = Buffer{};
  s.tiny_colind = Buffer{};
  s.tiny_values = Buffer{};
  s.tiny_b = Buffer{};
  s.tiny_c = Buffer{};
  clear_plan_memo();
  s.ctx.reset();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return real_main(argc, argv);
  } catch (const std::exception& ex) {
    std::cerr << ex.what() << "\n";
    return 2;
  }
}
