// SPDX-License-Identifier: Apache-2.0
// What the device-side index check costs next to one spmm (issue 13: under 5 % of one spmm at
// F = 32 on a 1M-entry graph, once per plan). The same one-shot spmm call (a named variant, so no
// scheduler work) is timed with the check on every call (ValidateMode::always) and with none
// (off), each call waited for; the difference is the check: its kernel, its 32-byte copy back and
// the synchronisation it adds. The spmm's own GPU time comes from CUDA events over queued calls.
// A second table times the plugin's summarize_csr slot (the scheduler's view of A) per call, with
// want = SIGNATURE (the cache-hit path), SIGNATURE | CHECK (what a plan's construction asks since
// the check rides on that pass) and SIGNATURE | FEATURES. A third times SpmmPlan's construction
// (a decision-cache hit after the first) with the check (once) and without (off): the difference
// is what validation once per plan costs, to set against one spmm.
//   validation_cost [F] [SPEC...]   (default F = 32, rmat:16:16 er:100000:0.0001 band:1000000:1)
#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "plugins/cuda/diagnostics.h"
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

template <class F>
double median_wall(int reps, F&& f) {
  std::vector<double> t;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int64_t F = 32;
  std::vector<std::string> specs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.find(':') == std::string::npos && a.find('.') == std::string::npos)
      F = std::atoll(a.c_str());
    else
      specs.push_back(a);
  }
  if (specs.empty()) specs = {"rmat:16:16", "er:100000:0.0001", "band:1000000:1"};
  Context ctx = Context::create("cuda:0");
  const auto stream = static_cast<cudaStream_t>(sparseport_cuda_stream(ctx.exec().state));
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<std::string> summary_rows, plan_rows;
  std::printf("| graph | rows | nnz | F | variant | spmm GPU us | spmm call us (off) | call us (always) | check us | check / spmm GPU | check / spmm call |\n");
  std::printf("|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
  for (const std::string& spec : specs) {
    const HostCsr<int32_t, float> h = load_graph<int32_t, float>(spec);
    const Buffer rp = upload(ctx, h.rowptr), ci = upload(ctx, h.colind), va = upload(ctx, h.values);
    const CsrView a = make_csr<int32_t, float>(h.rows, h.cols, h.nnz(), static_cast<const int32_t*>(rp.data()),
                                               static_cast<const int32_t*>(ci.data()),
                                               h.values.empty() ? nullptr : static_cast<const float*>(va.data()));
    HostDense<float> hb(h.cols, F);
    fill_random(hb.data, 1);
    const Buffer b = upload(ctx, hb.data), c = ctx.allocate(static_cast<size_t>(h.rows * F) * sizeof(float));
    const DenseView bv = make_dense<float>(h.cols, F, F, static_cast<const float*>(b.data()));
    const DenseMutView cv = make_dense<float>(h.rows, F, F, static_cast<float*>(c.data()));
    SpmmPlan plan(ctx, a, F);  // the scheduler's choice for this input is the spmm we compare with
    plan.run(bv, cv);
    const SpmmOptions opt{Reduce::sum, 1.0, 0.0, plan.decision().variant};
    auto call = [&] {
      spmm(ctx, a, bv, cv, opt);
      ctx.synchronize();
    };
    constexpr int kQueued = 50, kReps = 101;
    ctx.set_validate(ValidateMode::off);
    call();
    cudaEventRecord(e0, stream);
    for (int r = 0; r < kQueued; ++r) spmm(ctx, a, bv, cv, opt);
    cudaEventRecord(e1, stream);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    const double gpu = ms * 1e-3 / kQueued;
    // Interleave the two modes so that clock drift hits both alike.
    std::vector<double> off, always;
    for (int r = 0; r < 5; ++r) {
      ctx.set_validate(ValidateMode::off);
      off.push_back(median_wall(kReps / 5, call));
      ctx.set_validate(ValidateMode::always);
      always.push_back(median_wall(kReps / 5, call));
    }
    std::sort(off.begin(), off.end());
    std::sort(always.begin(), always.end());
    const double t_off = off[2], t_always = always[2], check = t_always - t_off;
    std::printf("| %s | %lld | %lld | %lld | %s | %.1f | %.1f | %.1f | %.1f | %.1f %% | %.1f %% |\n", spec.c_str(),
                static_cast<long long>(h.rows), static_cast<long long>(h.nnz()), static_cast<long long>(F),
                opt.variant.c_str(), gpu * 1e6, t_off * 1e6, t_always * 1e6, check * 1e6, 100 * check / gpu,
                100 * check / t_off);

    // summarize_csr, each call waited for (the slot synchronises).
    const sparseport_plugin* t = ctx.plugin().table;
    if (t->summarize_csr != nullptr) {
      const sparseport_csr abi{h.rows, h.cols, h.nnz(), rp.data(), ci.data(), nullptr, SPARSEPORT_I32, SPARSEPORT_F32};
      const sparseport_exec x = ctx.exec();
      auto summary_us = [&](uint32_t want) {
        sparseport_csr_summary out{};
        sparseport_status st{};
        auto one = [&] {
          if (t->summarize_csr(&x, &abi, want, &out, &st) != SPARSEPORT_OK) std::fprintf(stderr, "%s\n", st.message);
        };
        one();
        return median_wall(kReps, one) * 1e6;
      };
      // Interleaved, as above; medians of the five rounds' medians.
      std::vector<double> sig, chk;
      for (int r = 0; r < 5; ++r) {
        sig.push_back(summary_us(SPARSEPORT_SUMMARY_SIGNATURE));
        chk.push_back(summary_us(SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_CHECK));
      }
      std::sort(sig.begin(), sig.end());
      std::sort(chk.begin(), chk.end());
      char line[320];
      std::snprintf(line, sizeof line, "| %s | %lld | %lld | %.1f | %.1f | %.1f | %.1f %% | %.1f |", spec.c_str(),
                    static_cast<long long>(h.rows), static_cast<long long>(h.nnz()), sig[2], chk[2], chk[2] - sig[2],
                    100 * (chk[2] - sig[2]) * 1e-6 / gpu,
                    summary_us(SPARSEPORT_SUMMARY_SIGNATURE | SPARSEPORT_SUMMARY_FEATURES));
      summary_rows.push_back(line);
    }

    // SpmmPlan's construction, validate once (the check rides on the signature pass) vs off.
    std::vector<double> plan_off, plan_once;
    auto build = [&] { SpmmPlan p(ctx, a, F); };
    for (int r = 0; r < 5; ++r) {
      ctx.set_validate(ValidateMode::off);
      plan_off.push_back(median_wall(kReps / 5, build));
      ctx.set_validate(ValidateMode::once);
      plan_once.push_back(median_wall(kReps / 5, build));
    }
    std::sort(plan_off.begin(), plan_off.end());
    std::sort(plan_once.begin(), plan_once.end());
    const double extra = plan_once[2] - plan_off[2];
    char pl[320];
    std::snprintf(pl, sizeof pl, "| %s | %lld | %.1f | %.1f | %.1f | %.1f %% | %.1f %% |", spec.c_str(),
                  static_cast<long long>(h.nnz()), plan_off[2] * 1e6, plan_once[2] * 1e6, extra * 1e6,
                  100 * extra / gpu, 100 * extra / t_off);
    plan_rows.push_back(pl);
  }
  std::printf("\n| graph | rows | nnz | summarize_csr SIGNATURE us | SIGNATURE + CHECK us | check us | check / spmm GPU | "
              "SIGNATURE + FEATURES us |\n|---|---:|---:|---:|---:|---:|---:|---:|\n");
  for (const std::string& r : summary_rows) std::printf("%s\n", r.c_str());
  std::printf("\n| graph | nnz | SpmmPlan us (validate off) | SpmmPlan us (once) | check us | check / spmm GPU | "
              "check / spmm call |\n|---|---:|---:|---:|---:|---:|---:|\n");
  for (const std::string& r : plan_rows) std::printf("%s\n", r.c_str());
  return 0;
}
