// SPDX-License-Identifier: Apache-2.0
// A quick look at the cuda variants' speed for the plugin's own development: not a test, not the
// benchmark suite (benchmarks/ is that). After a warm-up call (which builds plans; the spmm table
// prints its wall time as "first call"), up to 20 calls
// are queued behind a "ballast" of other GPU work, so the host's per-call overhead hides behind
// it, and CUDA events on the context's stream time them: GPU time per call. No input rotation,
// one run: good for spotting a variant that is far off, not for claims. One table on stdout.
//   cuda_timing [--tc | --spmm] [--only V,V,...] [--F N,N,...] [SPEC...]   (default: the issue's
//   generated suite; --tc: only the tensor-core table; --spmm: only the spmm table, every CUDA-core
//   variant and hub_split's thresholds; --only: those variants of the spmm table alone, nothing
//   else timed, for an A/B; --F: the spmm table's widths, else 32, 64, 256)
// Without SPARSEPORT_CUDA_TENSOR_CORES=1 (or the build option) the tensor-core table is skipped, saying so.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "plugins/cuda/diagnostics.h"
#include "sparseport/half.hpp"
#include "sparseport/sparseport.hpp"

namespace {

using namespace sparseport;
using Clock = std::chrono::steady_clock;

template <class T>
Buffer upload(const Context& ctx, const std::vector<T>& v) {
  Buffer b = ctx.allocate(v.size() * sizeof(T));
  ctx.copy_to_backend(b.data(), v.data(), v.size() * sizeof(T));
  return b;
}

// Fills n floats on the device from a repeated 16M-float random block.
Buffer random_device_floats(const Context& ctx, size_t n, uint64_t seed) {
  std::vector<float> block(size_t{1} << 24);
  fill_random(block, seed);
  Buffer b = ctx.allocate(n * sizeof(float));
  for (size_t off = 0; off < n; off += block.size())
    ctx.copy_to_backend(static_cast<float*>(b.data()) + off, block.data(), std::min(block.size(), n - off) * sizeof(float));
  return b;
}

// GPU seconds per call of f, and the host's seconds per call to queue it (its overhead).
struct Timing {
  double gpu = 0.0, host = 0.0;
  double first = 0.0;  // the first call, wall clock to its synchronize: it builds the variant's plans
};

struct Timer {
  const Context& ctx;
  cudaStream_t stream;
  cudaEvent_t e0 = nullptr, e1 = nullptr;
  std::function<void()> ballast;  // one unit of unrelated GPU work
  double ballast_s = 0.0;

  explicit Timer(const Context& c)
      : ctx(c), stream(static_cast<cudaStream_t>(sparseport_cuda_stream(c.exec().state))) {
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
  }
  ~Timer() {
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }

  double events(const std::function<void()>& f, int reps) {
    cudaEventRecord(e0, stream);
    for (int r = 0; r < reps; ++r) f();
    cudaEventRecord(e1, stream);
    cudaEventSynchronize(e1);
    float ms = 0.0f;
    cudaEventElapsedTime(&ms, e0, e1);
    return ms * 1e-3 / reps;
  }

  Timing time(const std::function<void()>& f) {
    auto t0 = Clock::now();
    f();
    ctx.synchronize();
    const double first_call = std::chrono::duration<double>(Clock::now() - t0).count();
    t0 = Clock::now();
    f();
    ctx.synchronize();
    const double first = std::chrono::duration<double>(Clock::now() - t0).count();
    const int reps = static_cast<int>(std::clamp(0.1 / std::max(first, 1e-6), 1.0, 20.0));
    Timing t;
    t.first = first_call;
    t0 = Clock::now();
    for (int r = 0; r < reps; ++r) f();
    t.host = std::chrono::duration<double>(Clock::now() - t0).count() / reps;
    ctx.synchronize();
    // Enough ballast that queueing the calls ends before the GPU reaches them.
    const int units = ballast ? static_cast<int>(std::ceil(1.5 * t.host * reps / ballast_s)) + 1 : 0;
    for (int u = 0; u < units; ++u) ballast();
    t.gpu = events(f, reps);
    return t;
  }
};

double copy_bandwidth(const Context& ctx) {
  const size_t bytes = size_t{1} << 30;
  Buffer a = ctx.allocate(bytes), b = ctx.allocate(bytes);
  sparseport_status st{};
  auto copy = [&] { ctx.plugin().table->copy(ctx.exec().state, b.data(), a.data(), bytes, SPARSEPORT_COPY_DEVICE_TO_DEVICE, &st); };
  copy();
  const auto t0 = Clock::now();
  for (int r = 0; r < 5; ++r) copy();
  const double t = std::chrono::duration<double>(Clock::now() - t0).count() / 5;
  return 2.0 * bytes / t / 1e12;  // read + write
}

// The spmm table's choices: the variants (empty: every CUDA-core one, then hub_split's thresholds,
// sddmm and attention) and the widths.
struct SpmmTable {
  std::vector<std::string> only;
  std::vector<int64_t> widths{32, 64, 256};
};

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  for (size_t b = 0; b <= s.size();) {
    const size_t e = std::min(s.find(',', b), s.size());
    if (e > b) out.push_back(s.substr(b, e - b));
    b = e + 1;
  }
  return out;
}

void spmm_suite(const Context& ctx, Timer& timer, const std::string& spec, const SpmmTable& table) {
  const auto t0 = Clock::now();
  const HostCsr<int32_t, float> h = load_graph<int32_t, float>(spec);  // a generator spec or a Matrix Market file
  std::printf("# %s: %lld x %lld, nnz %lld (generated in %.1f s)\n", spec.c_str(), static_cast<long long>(h.rows),
              static_cast<long long>(h.cols), static_cast<long long>(h.nnz()),
              std::chrono::duration<double>(Clock::now() - t0).count());
  const Buffer rp = upload(ctx, h.rowptr), ci = upload(ctx, h.colind), va = upload(ctx, h.values);
  const CsrView a = make_csr<int32_t, float>(h.rows, h.cols, h.nnz(), static_cast<const int32_t*>(rp.data()),
                                             static_cast<const int32_t*>(ci.data()), static_cast<const float*>(va.data()));
  for (const int64_t F : table.widths) {
    const Buffer b = random_device_floats(ctx, static_cast<size_t>(h.cols * F), 7);
    const Buffer c = ctx.allocate(static_cast<size_t>(h.rows * F) * sizeof(float));
    const DenseView bv = make_dense<float>(h.cols, F, F, static_cast<const float*>(b.data()));
    const DenseMutView cv = make_dense<float>(h.rows, F, F, static_cast<float*>(c.data()));
    double vendor = 0.0;
    std::vector<std::pair<std::string, Timing>> rows;
    for (const std::string& v : ctx.plugin().variants_of(SPARSEPORT_OP_SPMM)) {
      if (!table.only.empty() && std::find(table.only.begin(), table.only.end(), v) == table.only.end()) continue;
      if (v == "spmm.vector_rows" && F > 16) continue;
      if (v == "spmm.cusparse_spmv") continue;  // F == 1 only
      if (v == "spmm.tc_window" || v == "spmm.tc_window_tf32") continue;  // tc_suite
      const Timing t = timer.time([&] { spmm(ctx, a, bv, cv, {Reduce::sum, 1.0, 0.0, v}); });
      if (v == "spmm.cusparse") vendor = t.gpu;
      rows.emplace_back(v, t);
    }
    for (const auto& [v, t] : rows)
      std::printf("spmm  %-28s F %3lld  %-22s %9.4f ms  %6.2f TB/s gathered  %5.2fx cuSPARSE  (host %5.1f us/call, "
                  "first call %.2f ms)\n",
                  spec.c_str(), static_cast<long long>(F), v.c_str(), t.gpu * 1e3, 4.0 * F * h.nnz() / t.gpu / 1e12,
                  vendor / t.gpu, t.host * 1e6, t.first * 1e3);
    if (!table.only.empty()) continue;
    if (F == 64 || F == 32) {
      for (const char* T : {"32", "64", "128", "512", "2048"}) {
        setenv("SPARSEPORT_HUB_T", T, 1);
        const Timing t = timer.time([&] { spmm(ctx, a, bv, cv, {Reduce::sum, 1.0, 0.0, "spmm.hub_split"}); });
        std::printf("hubT  %-28s F %3lld  T %-20s %9.4f ms  %5.2fx cuSPARSE\n", spec.c_str(), static_cast<long long>(F),
                    T, t.gpu * 1e3, vendor / t.gpu);
      }
      unsetenv("SPARSEPORT_HUB_T");
    }
    if (F == 64) {
      const Buffer x = random_device_floats(ctx, static_cast<size_t>(h.rows * F), 8);
      const Buffer out = ctx.allocate(static_cast<size_t>(h.nnz()) * sizeof(float));
      const DenseView xv = make_dense<float>(h.rows, F, F, static_cast<const float*>(x.data()));
      const DenseMutView ov = make_dense<float>(h.nnz(), 1, 1, static_cast<float*>(out.data()));
      double sd_vendor = 0.0;
      std::vector<std::pair<std::string, double>> sd;
      for (const std::string& v : ctx.plugin().variants_of(SPARSEPORT_OP_SDDMM)) {
        const double t = timer.time([&] { sddmm(ctx, a, xv, bv, ov, {v}); }).gpu;
        if (v == "sddmm.cusparse") sd_vendor = t;
        sd.emplace_back(v, t);
      }
      for (const auto& [v, t] : sd)
        std::printf("sddmm %-28s F %3lld  %-22s %9.4f ms  %5.2fx cuSPARSE\n", spec.c_str(), static_cast<long long>(F),
                    v.c_str(), t * 1e3, sd_vendor / t);
      if (h.rows == h.cols)
        for (const std::string& v : ctx.plugin().variants_of(SPARSEPORT_OP_CSR_ATTENTION)) {
          const double t = timer.time([&] { csr_attention(ctx, a, xv, bv, bv, cv, {0.0, v}); }).gpu;
          std::printf("attn  %-28s F %3lld  %-22s %9.4f ms\n", spec.c_str(), static_cast<long long>(F), v.c_str(), t * 1e3);
        }
    }
  }
}

void segment_suite(const Context& ctx, Timer& timer, int64_t E, int64_t F, bool hubs) {
  std::vector<int32_t> idx(static_cast<size_t>(E));
  int64_t N = E / 16;
  if (!hubs) {
    for (int64_t e = 0; e < E; ++e) idx[static_cast<size_t>(e)] = static_cast<int32_t>(e / 16);
  } else {
    // Half of the messages go to 8 hub segments, the rest 16 per segment.
    const int64_t half = E / 2;
    for (int64_t e = 0; e < E; ++e)
      idx[static_cast<size_t>(e)] = static_cast<int32_t>(e < half ? e * 8 / half : 8 + (e - half) / 16);
    N = 8 + (E - half) / 16 + 1;
  }
  const Buffer di = upload(ctx, idx);
  const Buffer src = random_device_floats(ctx, static_cast<size_t>(E * F), 9);
  const Buffer out = ctx.allocate(static_cast<size_t>(N * F) * sizeof(float));
  const IndexView iv = make_index<int32_t>(E, static_cast<const int32_t*>(di.data()));
  const DenseView sv = make_dense<float>(E, F, F, static_cast<const float*>(src.data()));
  const DenseMutView ov = make_dense<float>(N, F, F, static_cast<float*>(out.data()));
  for (const std::string& v : ctx.plugin().variants_of(SPARSEPORT_OP_SEGMENT_REDUCE)) {
    const double t = timer.time([&] { segment_reduce(ctx, iv, sv, ov, {Reduce::sum, v}); }).gpu;
    const double bytes = 4.0 * (E * F + E + N * F);
    std::printf("segment_reduce E %lld F %lld %-8s %-30s %9.4f ms  %6.2f TB/s effective\n", static_cast<long long>(E),
                static_cast<long long>(F), hubs ? "hubs" : "uniform", v.c_str(), t * 1e3, bytes / t / 1e12);
  }
}

// Tensor-core SpMM (issue 33): spmm.tc_window (bf16) and spmm.tc_window_tf32 (float32 as TF32) beside
// cuSPARSE and our CUDA-core variants at F = 16, 32, 64, 128. Columns: the time, and the ratio to
// cuSPARSE's best float32 time (ALG2/ALG3, float32 copies of everything: what the plugin runs for
// 16-bit calls by default) and to cuSPARSE's own bf16 path (SPARSEPORT_CUSPARSE16=1: partial sums in
// bf16, the fastest path a cuSPARSE user has for bf16 data). The feature slice a warp covers
// (SPARSEPORT_TC_SLICE = 16, 32, 64) is timed at each width it fits, beside the default, and bf16 at
// each part length (SPARSEPORT_TC_PART_BLOCKS = 4 ... 32; tcsum says which the default chose). The first
// call on a matrix builds the format: its wall time over a steady call is the build's cost in calls.
// Last line per (graph, F): the best float32 CUDA-core variant, bf16 tc_window and TF32 against cuSPARSE.
void tc_suite(const Context& ctx, Timer& timer, const std::string& spec) {
  const HostCsr<int32_t, float> h = load_graph<int32_t, float>(spec);  // a generator spec or a Matrix Market file
  std::vector<bfloat16> v16(h.values.size());
  for (size_t i = 0; i < v16.size(); ++i) v16[i] = bfloat16(h.values[i]);
  std::printf("# tc %s: %lld x %lld, nnz %lld\n", spec.c_str(), static_cast<long long>(h.rows),
              static_cast<long long>(h.cols), static_cast<long long>(h.nnz()));
  const Buffer rp = upload(ctx, h.rowptr), ci = upload(ctx, h.colind), va = upload(ctx, h.values), va16 = upload(ctx, v16);
  const auto* rpp = static_cast<const int32_t*>(rp.data());
  const auto* cip = static_cast<const int32_t*>(ci.data());
  const CsrView a32 = make_csr<int32_t, float>(h.rows, h.cols, h.nnz(), rpp, cip, static_cast<const float*>(va.data()));
  const CsrView a16 = make_csr<int32_t, bfloat16>(h.rows, h.cols, h.nnz(), rpp, cip, static_cast<const bfloat16*>(va16.data()));
  bool built = false;
  for (int64_t F : {16, 32, 64, 128}) {
    const Buffer b32 = random_device_floats(ctx, static_cast<size_t>(h.cols * F), 7);
    const Buffer c32 = ctx.allocate(static_cast<size_t>(h.rows * F) * sizeof(float));
    std::vector<bfloat16> hb(static_cast<size_t>(h.cols * F));
    std::vector<float> fb(hb.size());
    fill_random(fb, 11);
    for (size_t i = 0; i < hb.size(); ++i) hb[i] = bfloat16(fb[i]);
    const Buffer b16 = upload(ctx, hb);
    const Buffer c16 = ctx.allocate(static_cast<size_t>(h.rows * F) * sizeof(bfloat16));
    const DenseView bv32 = make_dense<float>(h.cols, F, F, static_cast<const float*>(b32.data()));
    const DenseMutView cv32 = make_dense<float>(h.rows, F, F, static_cast<float*>(c32.data()));
    const DenseView bv16 = make_dense<bfloat16>(h.cols, F, F, static_cast<const bfloat16*>(b16.data()));
    const DenseMutView cv16 = make_dense<bfloat16>(h.rows, F, F, static_cast<bfloat16*>(c16.data()));
    const auto run16 = [&](const std::string& v) { spmm(ctx, a16, bv16, cv16, {Reduce::sum, 1.0, 0.0, v}); };
    const auto run32 = [&](const std::string& v) { spmm(ctx, a32, bv32, cv32, {Reduce::sum, 1.0, 0.0, v}); };
    if (!built) {
      for (const char* v : {"spmm.tc_window", "spmm.tc_window_tf32"}) {
        const auto run = [&] { std::string(v) == "spmm.tc_window" ? run16(v) : run32(v); };
        ctx.synchronize();
        const auto t0 = Clock::now();
        run();
        ctx.synchronize();
        const double first = std::chrono::duration<double>(Clock::now() - t0).count();
        const double steady = timer.time(run).gpu;
        sparseport_cuda_diagnostics d{};
        sparseport_cuda_get_diagnostics(ctx.exec().state, &d);
        std::printf("tcfmt %-28s %-20s first call %.3f ms, steady %.4f ms (F %lld): the build costs ~%.0f calls; %s\n",
                    spec.c_str(), v, first * 1e3, steady * 1e3, static_cast<long long>(F), (first - steady) / steady,
                    d.note);
      }
      built = true;
    }
    const double vendor32 = timer.time([&] { run32("spmm.cusparse"); }).gpu;
    setenv("SPARSEPORT_CUSPARSE16", "1", 1);
    const double vendor16 = timer.time([&] { run16("spmm.cusparse"); }).gpu;
    unsetenv("SPARSEPORT_CUSPARSE16");
    std::vector<std::pair<std::string, double>> rows = {{"f32 spmm.cusparse", vendor32}, {"bf16 spmm.cusparse16", vendor16}};
    double best32 = 1e30, best16cc = 1e30, tc16 = 1e30, tf32 = 1e30;
    for (const char* v : {"spmm.hub_split", "spmm.merge_path", "spmm.row_warp_vec4", "spmm.nnz_balanced"}) {
      const double t = timer.time([&] { run32(v); }).gpu;
      best32 = std::min(best32, t);
      rows.emplace_back(std::string("f32 ") + v, t);
    }
    for (const char* v : {"spmm.hub_split", "spmm.merge_path", "spmm.row_warp_vec4"}) {
      const double t = timer.time([&] { run16(v); }).gpu;
      best16cc = std::min(best16cc, t);
      rows.emplace_back(std::string("bf16 ") + v, t);
    }
    for (const char* slice : {"", "16", "32", "64"}) {
      if (*slice != '\0' && std::atoi(slice) > 2 * std::max<int64_t>(F, 16)) continue;  // lanes idle: not a choice
      if (*slice != '\0') setenv("SPARSEPORT_TC_SLICE", slice, 1);
      const std::string tag = *slice != '\0' ? std::string(" (slice ") + slice + ")" : std::string();
      const double t16 = timer.time([&] { run16("spmm.tc_window"); }).gpu;
      const double t32 = timer.time([&] { run32("spmm.tc_window_tf32"); }).gpu;
      unsetenv("SPARSEPORT_TC_SLICE");
      rows.emplace_back("bf16 spmm.tc_window" + tag, t16);
      rows.emplace_back("tf32 spmm.tc_window_tf32" + tag, t32);
      if (*slice == '\0') tc16 = t16, tf32 = t32;
    }
    // The part length tc_part_blocks chose at this F (the note of a default call), and bf16 with each
    // length forced on the same plan (SPARSEPORT_TC_PART_BLOCKS): what tc_part_cost_us's constants are
    // fitted to.
    run16("spmm.tc_window");
    sparseport_cuda_diagnostics d{};
    sparseport_cuda_get_diagnostics(ctx.exec().state, &d);
    const char* pb = std::strstr(d.note, "part blocks ");
    const int chosen = pb != nullptr ? std::atoi(pb + std::strlen("part blocks ")) : 0;
    for (const char* P : {"4", "8", "16", "32"}) {
      setenv("SPARSEPORT_TC_PART_BLOCKS", P, 1);
      const double t = timer.time([&] { run16("spmm.tc_window"); }).gpu;
      unsetenv("SPARSEPORT_TC_PART_BLOCKS");
      rows.emplace_back(std::string("bf16 spmm.tc_window (parts of ") + P + ")", t);
    }
    for (const auto& [v, t] : rows)
      std::printf("tc    %-28s F %3lld  %-36s %9.4f ms  %5.2fx cuSPARSE-f32  %5.2fx cuSPARSE-bf16\n", spec.c_str(),
                  static_cast<long long>(F), v.c_str(), t * 1e3, vendor32 / t, vendor16 / t);
    std::printf("tcsum %-28s F %3lld  best f32 CUDA-core %.2fx, bf16 CUDA-core %.2fx, bf16 tc_window %.2fx, tf32 %.2fx "
                "cuSPARSE-f32; bf16 tc_window %.2fx our best f32, %.2fx cuSPARSE-bf16; parts of %d chosen\n",
                spec.c_str(), static_cast<long long>(F), vendor32 / best32, vendor32 / best16cc, vendor32 / tc16,
                vendor32 / tf32, best32 / tc16, vendor16 / tc16, chosen);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a run cut short still leaves its finished lines
  try {
    Context ctx = Context::create("cuda");
    ctx.set_allow_tf32(true);  // spmm.tc_window_tf32 is timed by name
    char line[1024];
    sparseport_status st{};
    ctx.plugin().table->describe_devices(line, sizeof line, &st);
    std::printf("# %s\n# device-to-device copy: %.2f TB/s (read + write)\n", line, copy_bandwidth(ctx));
    Timer timer(ctx);
    // Ballast: spmm.row_warp_vec4 on er:200000:2e-5 at F = 256 (~0.3 ms on an H100).
    const HostCsr<int32_t, float> bh = generate<int32_t, float>("er:200000:2e-5");
    const Buffer brp = upload(ctx, bh.rowptr), bci = upload(ctx, bh.colind), bva = upload(ctx, bh.values);
    const CsrView ba = make_csr<int32_t, float>(bh.rows, bh.cols, bh.nnz(), static_cast<const int32_t*>(brp.data()),
                                                static_cast<const int32_t*>(bci.data()),
                                                static_cast<const float*>(bva.data()));
    const Buffer bb = random_device_floats(ctx, static_cast<size_t>(bh.cols * 256), 3);
    const Buffer bc = ctx.allocate(static_cast<size_t>(bh.rows * 256) * sizeof(float));
    timer.ballast = [&] {
      spmm(ctx, ba, make_dense<float>(bh.cols, 256, 256, static_cast<const float*>(bb.data())),
           make_dense<float>(bh.rows, 256, 256, static_cast<float*>(bc.data())), {Reduce::sum, 1.0, 0.0, "spmm.row_warp_vec4"});
    };
    timer.ballast();
    ctx.synchronize();
    timer.ballast_s = timer.events(timer.ballast, 10);
    std::printf("# ballast unit %.3f ms\n", timer.ballast_s * 1e3);
    std::vector<std::string> specs;
    bool tc_only = false;    // --tc: only tc_suite (issue 33's tensor-core table)
    bool spmm_only = false;  // --spmm: only spmm_suite
    SpmmTable table;
    for (int i = 1; i < argc; ++i) {
      if (std::string(argv[i]) == "--tc" || std::string(argv[i]) == "--bf16")
        tc_only = true;
      else if (std::string(argv[i]) == "--spmm")
        spmm_only = true;
      else if (std::string(argv[i]) == "--only" && i + 1 < argc)
        table.only = split_commas(argv[++i]), spmm_only = true;
      else if (std::string(argv[i]) == "--F" && i + 1 < argc) {
        table.widths.clear();
        for (const std::string& w : split_commas(argv[++i])) table.widths.push_back(std::stoll(w));
      }
      else
        specs.emplace_back(argv[i]);
    }
    if (tc_only) {
      if (specs.empty()) specs = {"er:200000:2e-5", "rmat:20:16", "megarow:2000000:16:0.05", "band:1000000:16"};
      for (const std::string& s : specs) tc_suite(ctx, timer, s);
      return 0;
    }
    if (specs.empty())
      specs = {"er:200000:2e-5", "rmat:20:16", "megarow:2000000:16:0.05", "er:2000000:8e-6", "band:1000000:16"};
    for (const std::string& s : specs) spmm_suite(ctx, timer, s, table);
    if (spmm_only) return 0;
    for (const std::string& s : specs) {
      try {
        tc_suite(ctx, timer, s);
      } catch (const Unsupported& e) {  // tensor cores off in this build and environment
        std::printf("# tc %s skipped: %s\n", s.c_str(), e.what());
        break;
      }
    }
    segment_suite(ctx, timer, 60000000, 64, false);
    segment_suite(ctx, timer, 60000000, 64, true);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "cuda_timing: %s\n", e.what());
    return 1;
  }
  return 0;
}
