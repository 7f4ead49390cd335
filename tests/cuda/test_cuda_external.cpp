// SPDX-License-Identifier: Apache-2.0
// set_external (ABI 1.5) on a GPU, through the cuda plugin's slot: a stream and a scratch allocator
// lent by the caller (what PyTorch's current stream and caching allocator are to the Python
// package). Checked here:
//  - every op variant queues on the lent stream (held shut by a gate, the op's output stays
//    unwritten until the gate opens), cuSPARSE included, with the same results as on the plugin's
//    own stream; a null stream gives the own stream back;
//  - work queued before a change of stream comes before work queued after it;
//  - scratch comes from the lent allocator, on the lent stream, and is all given back before the
//    calls return; an allocator that gives nothing is OutOfMemory and the context stays usable;
//  - the context's ops and synchronize() never wait for another stream's work (nothing waits for
//    the whole device).
// Without a GPU every test skips and says why.
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "cuda_abi.hpp"

namespace {

using namespace sparseport;
using namespace cuda_test;

constexpr uint64_t kSeed = 20261216;

// Scratch lent through set_external: stream-ordered blocks from the device's default pool, counted.
struct CountingAllocator {
  std::mutex mu;
  std::map<void*, size_t> live;
  size_t allocs = 0, releases = 0, bytes_allocated = 0, bytes_released = 0, mismatched = 0;
  std::vector<void*> streams;  // the stream of every call
  bool refuse = false;

  static void* alloc(void* user, size_t bytes, void* stream) {
    auto* self = static_cast<CountingAllocator*>(user);
    std::lock_guard<std::mutex> lock(self->mu);
    self->streams.push_back(stream);
    if (self->refuse) return nullptr;
    void* p = nullptr;
    if (cudaMallocAsync(&p, bytes, static_cast<cudaStream_t>(stream)) != cudaSuccess) return nullptr;
    self->live[p] = bytes;
    ++self->allocs;
    self->bytes_allocated += bytes;
    return p;
  }
  static void release(void* user, void* ptr, size_t bytes, void* stream) {
    auto* self = static_cast<CountingAllocator*>(user);
    std::lock_guard<std::mutex> lock(self->mu);
    self->streams.push_back(stream);
    auto it = self->live.find(ptr);
    if (it == self->live.end() || it->second != bytes) ++self->mismatched;
    if (it != self->live.end()) self->live.erase(it);
    ++self->releases;
    self->bytes_released += bytes;
    (void)cudaFreeAsync(ptr, static_cast<cudaStream_t>(stream));
  }
  sparseport_external lend(cudaStream_t stream) { return {stream, &alloc, &release, this}; }
};

template <class V>
Expected spmm_oracle(const HostCsr<int32_t, V>& a, const HostDense<V>& b, Reduce r) {
  return reduce_rows(a.rows, b.cols, r, entries_by_row(a), [&](int64_t e, int64_t f) {
    return value_of(a, e) * static_cast<double>(b(a.colind[static_cast<size_t>(e)], f));
  });
}

// The cuda plugin's spmm slot; false (nothing run) where the variant does not apply.
bool spmm_slot(const Context& ctx, const std::string& variant, const sparseport_spmm_args& args) {
  if (!spmm_variant_applies(variant, args)) return false;
  const sparseport_exec x = ctx.exec();
  sparseport_status st{};
  expect_ok(cuda_table().spmm(&x, variant.c_str(), &args, &st), st, "cuda spmm " + variant);
  return true;
}

// Every spmm variant, and the structural ops, queued on a lent stream held shut: nothing written
// before the gate opens, the right answer after. The plans (hub_split, cusparse) are built on the
// own stream first, so the calls under the gate are the plain ones (a plan's build waits for its
// stream, which would wait for the gate). Every kernel also runs once before any gate shuts: its
// first launch loads its module (CUDA's lazy loading, the default), and that load waits for the
// context's streams, so a first launch behind a shut gate waits for the gate (this test and the
// next one timed out that way on an H200 until 2026-11-26; with CUDA_MODULE_LOADING=EAGER they
// passed, which is how the cause was found).
TEST(CudaExternal, OpsRunOnTheLentStream) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  ctx.set_validate(ValidateMode::off);
  const cudaStream_t own = stream_of(ctx);
  const auto a = skewed_csr<int32_t, float>(3000, 2500, 20000, 0.4, kSeed);
  const auto da = to_device(ctx, a);
  const int64_t F = 32;
  const HostDense<float> b = random_dense<float>(a.cols, F, F, kSeed + 1);
  const DevDense<float> db = to_device(ctx, b);
  const DevDense<float> dc = to_device(ctx, HostDense<float>(a.rows, F, F, 0.0f));
  std::vector<std::string> variants;  // TF32 ones left out: float32 tolerance here (test_cuda_tc.cpp has theirs)
  for (const VariantInfo& x : plugin("cuda").variants)
    if (x.op == SPARSEPORT_OP_SPMM && !x.tf32) variants.push_back(x.name);
  for (const std::string& v : variants)  // plans and the kernels' first launches, on the own stream
    for (Reduce r : {Reduce::sum, Reduce::max})
      (void)spmm_slot(ctx, v, {abi_of(da.view), abi_of(db.view()), abi_of(dc.mut()), static_cast<int32_t>(r), 1.0, 0.0,
                               nullptr, 0});

  TestStream lent;
  const sparseport_external ext{lent.get(), nullptr, nullptr, nullptr};
  set_external(ctx, &ext);
  EXPECT_EQ(stream_of(ctx), lent.get());
  const float kMark = -12345.0f;
  const HostDense<float> marked(a.rows, F, F, kMark);
  for (const std::string& v : variants) {
    for (Reduce r : {Reduce::sum, Reduce::max}) {
      if (v == "spmm.cusparse" && r != Reduce::sum) continue;
      SCOPED_TRACE(v + ", " + name(r));
      ctx.copy_to_backend(dc.data(), marked.data.data(), marked.data.size() * sizeof(float));
      const sparseport_spmm_args args{abi_of(da.view), abi_of(db.view()), abi_of(dc.mut()), static_cast<int32_t>(r),
                                      1.0,             0.0,              nullptr,          0};
      if (!spmm_variant_applies(v, args)) continue;
      Gate gate(lent.get());
      gate.close();
      ASSERT_TRUE(returns_while_shut(gate, [&] { spmm_slot(ctx, v, args); })) << "the op waited for the lent stream";
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      const std::vector<float> early = peek<float>(dc.data(), marked.data.size());
      EXPECT_EQ(early, marked.data) << "C was written before the lent stream ran: the op ran on another stream";
      gate.open();
      cuda_ok(cudaStreamSynchronize(lent.get()), "cudaStreamSynchronize (lent)");
      EXPECT_TRUE(close_to(to_host(ctx, dc), spmm_oracle(a, b, r), F));
    }
  }
  // csr_transpose with int64 indices has no host synchronisation of its own (the int32 one checks
  // its total on the host first): scratch, a CUB scan and sort, all on the lent stream.
  const auto a64 = skewed_csr<int64_t, double>(2000, 1500, 12000, 0.2, kSeed + 2);
  const auto da64 = to_device(ctx, a64);
  Buffer rp = ctx.allocate(static_cast<size_t>(a64.cols + 1) * 8), ci = ctx.allocate(a64.colind.size() * 8),
         vv = ctx.allocate(a64.values.size() * 8), pm = ctx.allocate(a64.colind.size() * 8);
  const std::vector<int64_t> minus(a64.colind.size(), -1);
  const sparseport_transpose_args t{abi_of(da64.view),
                                    {a64.cols, a64.rows, a64.nnz(), rp.data(), ci.data(), vv.data(), SPARSEPORT_I64,
                                     SPARSEPORT_F64},
                                    pm.data()};
  const auto transpose = [&] {
    const sparseport_exec x = ctx.exec();
    sparseport_status st{};
    expect_ok(cuda_table().csr_transpose(&x, "csr_transpose.device", &t, &st), st, "cuda csr_transpose");
  };
  transpose();  // the kernels' first launches, before the gate
  ctx.copy_to_backend(pm.data(), minus.data(), minus.size() * 8);
  {
    Gate gate(lent.get());
    gate.close();
    ASSERT_TRUE(returns_while_shut(gate, transpose)) << "csr_transpose waited for the lent stream";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(peek<int64_t>(pm.data(), minus.size()), minus) << "perm was written before the lent stream ran";
    gate.open();
  }
  std::vector<int64_t> perm = download<int64_t>(ctx, pm.data(), minus.size());
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t e = 0; e < sorted.size(); ++e) ASSERT_EQ(sorted[e], static_cast<int64_t>(e)) << "perm is no permutation";

  // A null stream gives the own stream back; ops run there again.
  set_external(ctx, nullptr);
  EXPECT_EQ(stream_of(ctx), own);
  spmm_slot(ctx, "spmm.row_warp", {abi_of(da.view), abi_of(db.view()), abi_of(dc.mut()), SPARSEPORT_REDUCE_SUM, 1.0, 0.0, nullptr, 0});
  EXPECT_TRUE(close_to(to_host(ctx, dc), spmm_oracle(a, b, Reduce::sum), F));
  const sparseport_external no_stream{nullptr, nullptr, nullptr, nullptr};
  set_external(ctx, &ext);
  set_external(ctx, &no_stream);
  EXPECT_EQ(stream_of(ctx), own);
}

// C1 = A B queued on the own stream behind a gate; then the stream changes and C2 = A C1 is queued
// on the lent one: it must wait for C1 (the lent stream waits on the own one), so C2 = A (A B).
TEST(CudaExternal, WorkBeforeAChangeOfStreamComesFirst) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  ctx.set_validate(ValidateMode::off);
  const auto a = skewed_csr<int32_t, double>(2000, 2000, 16000, 0.2, kSeed + 10);
  const auto da = to_device(ctx, a);
  const int64_t F = 16;
  const HostDense<double> b = random_dense<double>(a.cols, F, F, kSeed + 11);
  const DevDense<double> db = to_device(ctx, b);
  const DevDense<double> c1 = to_device(ctx, HostDense<double>(a.rows, F, F, 0.0));
  const DevDense<double> c2 = to_device(ctx, HostDense<double>(a.rows, F, F, 0.0));
  // The kernel's first launch, before the gate (see OpsRunOnTheLentStream: lazy module loading).
  spmm_slot(ctx, "spmm.row_warp", {abi_of(da.view), abi_of(db.view()), abi_of(c1.mut()), SPARSEPORT_REDUCE_SUM, 1.0, 0.0, nullptr, 0});
  TestStream lent;
  {
    Gate gate(stream_of(ctx));
    gate.close();
    ASSERT_TRUE(returns_while_shut(gate, [&] {
      spmm_slot(ctx, "spmm.row_warp",
                {abi_of(da.view), abi_of(db.view()), abi_of(c1.mut()), SPARSEPORT_REDUCE_SUM, 1.0, 0.0, nullptr, 0});
      const sparseport_external ext{lent.get(), nullptr, nullptr, nullptr};
      set_external(ctx, &ext);
      spmm_slot(ctx, "spmm.row_warp",
                {abi_of(da.view), abi_of(c1.view()), abi_of(c2.mut()), SPARSEPORT_REDUCE_SUM, 1.0, 0.0, nullptr, 0});
    })) << "an op or the change of stream waited for the own stream";
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(cudaStreamQuery(lent.get()), cudaErrorNotReady) << "the lent stream did not wait for the own one";
    gate.open();
  }
  cuda_ok(cudaStreamSynchronize(lent.get()), "cudaStreamSynchronize (lent)");
  const HostDense<double> got1 = to_host(ctx, c1);
  EXPECT_TRUE(close_to(got1, spmm_oracle(a, b, Reduce::sum), F));
  EXPECT_TRUE(close_to(to_host(ctx, c2), spmm_oracle(a, got1, Reduce::sum), F));
  set_external(ctx, nullptr);
}

// Ops that take scratch (a CUB scan and sort, hub_split's partials, nnz_balanced's slots, the
// deterministic segment reduction, the backward's own A^T), with a counting allocator lent: every
// block on the lent stream, each given back with the size it was taken with, none left after the
// calls; results the same bits as with the plugin's pool (max and min do not depend on order).
TEST(CudaExternal, ScratchComesFromTheLentAllocator) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  ctx.set_validate(ValidateMode::off);
  const auto a = skewed_csr<int32_t, float>(3000, 2500, 20000, 0.4, kSeed + 20);
  const auto da = to_device(ctx, a);
  const int64_t F = 24;
  const DevDense<float> db = to_device(ctx, random_dense<float>(a.cols, F, F, kSeed + 21));
  const DevDense<float> dc = to_device(ctx, HostDense<float>(a.rows, F, F, 0.0f));
  const DevDense<float> dgrad = to_device(ctx, random_dense<float>(a.rows, F, F, kSeed + 22));
  const DevDense<float> dbgrad = to_device(ctx, HostDense<float>(a.cols, F, F, 0.0f));
  const Buffer darg = ctx.allocate(static_cast<size_t>(a.rows * F) * sizeof(int32_t));
  const Buffer seg_index = upload(ctx, [&] {
    std::vector<int32_t> idx;
    for (int64_t i = 0; i < a.rows; ++i)
      for (int32_t e = a.rowptr[static_cast<size_t>(i)]; e < a.rowptr[static_cast<size_t>(i) + 1]; ++e)
        idx.push_back(static_cast<int32_t>(i));
    return idx;
  }());
  const DevDense<float> src = to_device(ctx, random_dense<float>(a.nnz(), F, F, kSeed + 23));
  const DevDense<float> seg_out = to_device(ctx, HostDense<float>(a.rows, F, F, 0.0f));

  // Runs the ops and returns their results, all downloaded.
  auto run = [&]() {
    std::vector<std::vector<char>> out;
    auto keep = [&](const void* p, size_t bytes) {
      std::vector<char> h(bytes);
      ctx.copy_to_host(h.data(), p, bytes);
      out.push_back(std::move(h));
    };
    const CsrMatrix t = csr_transpose(ctx, da.view);
    keep(t.rowptr.data(), static_cast<size_t>(t.rows + 1) * 4);
    keep(t.colind.data(), static_cast<size_t>(t.nnz) * 4);
    for (const char* v : {"spmm.hub_split", "spmm.nnz_balanced"}) {
      spmm(ctx, da.view, db.view(), dc.mut(), {Reduce::max, 1.0, 0.0, v});
      keep(dc.data(), static_cast<size_t>(a.rows * F) * 4);
    }
    segment_reduce(ctx, make_index(a.nnz(), static_cast<const int32_t*>(seg_index.data())), src.view(), seg_out.mut(),
                   {Reduce::min, "segment_reduce.nnz_balanced_deterministic"});
    keep(seg_out.data(), static_cast<size_t>(a.rows * F) * 4);
    // The deterministic backward without a transpose builds one in scratch.
    spmm_slot(ctx, "spmm.row_warp",
              {abi_of(da.view), abi_of(db.view()), abi_of(dc.mut()), SPARSEPORT_REDUCE_MAX, 1.0, 0.0, darg.data(), F});
    sparseport_exec x = ctx.exec();
    x.flags |= SPARSEPORT_EXEC_DETERMINISTIC;
    const sparseport_spmm_arg_backward_args bwd{abi_of(da.view), abi_of(db.view()), abi_of(dgrad.view()), darg.data(), F,
                                                abi_of(dbgrad.mut()), {0, 1, 1, nullptr, SPARSEPORT_F32}, nullptr,
                                                nullptr, nullptr};
    sparseport_status st{};
    expect_ok(cuda_table().spmm_arg_backward(&x, &bwd, &st), st, "cuda spmm_arg_backward");
    keep(dbgrad.data(), static_cast<size_t>(a.cols * F) * 4);
    ctx.synchronize();
    return out;
  };
  const auto pooled = run();

  CountingAllocator counter;
  TestStream lent;
  sparseport_external ext = counter.lend(lent.get());
  set_external(ctx, &ext);
  const auto lent_results = run();
  {
    std::lock_guard<std::mutex> lock(counter.mu);
    EXPECT_GT(counter.allocs, 0u) << "no scratch was taken from the lent allocator";
    EXPECT_EQ(counter.allocs, counter.releases);
    EXPECT_EQ(counter.bytes_allocated, counter.bytes_released);
    EXPECT_EQ(counter.mismatched, 0u) << "a block was given back with another size, or twice";
    EXPECT_TRUE(counter.live.empty()) << counter.live.size() << " blocks still out after synchronize";
    for (void* s : counter.streams) EXPECT_EQ(s, static_cast<void*>(lent.get())) << "a callback got another stream";
  }
  ASSERT_EQ(pooled.size(), lent_results.size());
  for (size_t k = 0; k < pooled.size(); ++k) EXPECT_EQ(pooled[k], lent_results[k]) << "result " << k << " differs";

  // An allocator without a stream of its own: the callbacks get the plugin's stream.
  CountingAllocator own_counter;
  sparseport_external own_ext = own_counter.lend(nullptr);
  set_external(ctx, &own_ext);
  (void)run();
  {
    std::lock_guard<std::mutex> lock(own_counter.mu);
    EXPECT_GT(own_counter.allocs, 0u);
    EXPECT_TRUE(own_counter.live.empty());
    for (void* s : own_counter.streams) EXPECT_EQ(s, sparseport_cuda_stream(state_of(ctx)));
  }

  // An allocator that gives nothing: OutOfMemory naming it, and the context still works after.
  counter.refuse = true;
  set_external(ctx, &ext);
  try {
    (void)csr_transpose(ctx, da.view);
    ADD_FAILURE() << "csr_transpose ran without scratch";
  } catch (const OutOfMemory& e) {
    EXPECT_NE(std::string(e.what()).find("scratch allocator"), std::string::npos) << e.what();
  }
  counter.refuse = false;
  EXPECT_EQ(run(), pooled);
  set_external(ctx, nullptr);
  EXPECT_EQ(run(), pooled);

  // alloc without release (or the other way round) is refused.
  const sparseport_external half{nullptr, &CountingAllocator::alloc, nullptr, &counter};
  sparseport_status st{};
  EXPECT_EQ(cuda_table().set_external(state_of(ctx), &half, &st), SPARSEPORT_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(st.message).find("release"), std::string::npos) << st.message;
}

// Another stream of the process held shut (as PyTorch's other streams may be busy): the context's
// ops, copies and synchronize() still finish, so none of them waits for the whole device. Run in a
// thread with a deadline, so that a wait for the device fails the test instead of hanging it. A
// first pass outside the gate loads the kernels and builds the plans of a first copy of A (the
// CUDA runtime's lazy loading of a kernel, and cuSPARSE building its plan, are not this test's
// subject); under the gate hub_split also builds a plan for A with its rows reversed (a host read
// of rowptr), shares the first copy's plan with a second copy (a comparison of rowptrs on the
// device, 4 bytes read back), csr_transpose on int32 checks its total on the host, then a copy and
// synchronize().
TEST(CudaExternal, NothingWaitsForTheWholeDevice) {
  CUDA_TEST_REQUIRE_GPU();
  Context ctx = Context::create("cuda");
  ctx.set_validate(ValidateMode::off);
  const auto a = skewed_csr<int32_t, float>(3000, 2500, 20000, 0.4, kSeed + 30);
  const auto da = to_device(ctx, a);
  const int64_t F = 32;
  const HostDense<float> b = random_dense<float>(a.cols, F, F, kSeed + 31);
  const DevDense<float> db = to_device(ctx, b);
  const DevDense<float> dc = to_device(ctx, HostDense<float>(a.rows, F, F, 0.0f));
  TestStream other, lent;
  const Buffer pm = ctx.allocate(a.colind.size() * 4), rp = ctx.allocate(static_cast<size_t>(a.cols + 1) * 4),
               ci = ctx.allocate(a.colind.size() * 4), vv = ctx.allocate(a.values.size() * 4);
  // Per gated pass: A with its rows reversed (another rowptr: a plan to build), and a new copy of A
  // (an equal rowptr: the first copy's plan to share).
  HostCsr<int32_t, float> reversed = a;
  reversed.colind.clear();
  reversed.values.clear();
  reversed.rowptr.assign(1, 0);
  for (int64_t r = a.rows - 1; r >= 0; --r) {
    for (int32_t e = a.rowptr[static_cast<size_t>(r)]; e < a.rowptr[static_cast<size_t>(r) + 1]; ++e) {
      reversed.colind.push_back(a.colind[static_cast<size_t>(e)]);
      reversed.values.push_back(a.values[static_cast<size_t>(e)]);
    }
    reversed.rowptr.push_back(static_cast<int32_t>(reversed.colind.size()));
  }
  std::vector<DevCsr<int32_t, float>> fresh, rows_reversed;
  for (int k = 0; k < 2; ++k) {
    fresh.push_back(to_device(ctx, a));
    rows_reversed.push_back(to_device(ctx, reversed));
  }
  std::vector<float> h(static_cast<size_t>(a.rows * F));
  auto work = [&](bool lend, const CsrView* hub_matrix, const CsrView* hub_other) {
    if (lend) {
      const sparseport_external ext{lent.get(), nullptr, nullptr, nullptr};
      set_external(ctx, &ext);
    }
    for (const std::string& v : plugin("cuda").variants_of(SPARSEPORT_OP_SPMM))
      spmm_slot(ctx, v, {abi_of(da.view), abi_of(db.view()), abi_of(dc.mut()), SPARSEPORT_REDUCE_SUM, 1.0, 0.0, nullptr, 0});
    for (const CsrView* m : {hub_other, hub_matrix})  // the copy of A last: C is A B
      if (m != nullptr)
        spmm_slot(ctx, "spmm.hub_split",
                  {abi_of(*m), abi_of(db.view()), abi_of(dc.mut()), SPARSEPORT_REDUCE_SUM, 1.0, 0.0, nullptr, 0});
    const sparseport_transpose_args t{abi_of(da.view),
                                      {a.cols, a.rows, a.nnz(), rp.data(), ci.data(), vv.data(), SPARSEPORT_I32,
                                       SPARSEPORT_F32},
                                      pm.data()};
    const sparseport_exec x = ctx.exec();
    sparseport_status st{};
    expect_ok(cuda_table().csr_transpose(&x, "csr_transpose.device", &t, &st), st, "cuda csr_transpose");
    ctx.copy_to_host(h.data(), dc.data(), h.size() * sizeof(float));
    ctx.synchronize();
    if (lend) set_external(ctx, nullptr);
  };
  work(false, nullptr, nullptr);
  for (bool lend : {false, true}) {
    SCOPED_TRACE(lend ? "on a lent stream" : "on the plugin's stream");
    Gate gate(other.get());
    gate.close();
    const size_t k = lend ? 1 : 0;
    EXPECT_TRUE(returns_while_shut(gate, [&] { work(lend, &fresh[k].view, &rows_reversed[k].view); }))
        << "the context's work waited for another stream (a wait for the whole device)";
  }
  EXPECT_TRUE(close_to(to_host(ctx, dc), spmm_oracle(a, b, Reduce::sum), F));
}

}  // namespace
