// SPDX-License-Identifier: Apache-2.0
// sparseport._C: the public C++ API (include/sparseport) for Python, with no libtorch in sight.
// Arrays cross as raw addresses (Python ints from Tensor.data_ptr()) plus shapes, leading
// dimensions and the plugin ABI's type tags; sparseport/torch.py checks devices, dtypes and strides
// before calling, the C++ front end checks shapes, types and index contents as for any caller.
// Every op releases the GIL. On a device backend sparseport.torch lends the context PyTorch's
// current stream and caching allocator, so ops queue behind PyTorch's work and nothing waits; a
// context on its own stream ends each op with synchronize() instead.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sparseport/sparseport.hpp"

namespace nb = nanobind;
namespace sp = sparseport;

namespace {

// Python exception types, made once at import (see NB_MODULE below).
PyObject* g_error = nullptr;             // sparseport.Error(RuntimeError)
PyObject* g_invalid_argument = nullptr;  // sparseport.InvalidArgument(Error, ValueError)
PyObject* g_unsupported = nullptr;       // sparseport.Unsupported(Error, NotImplementedError)
PyObject* g_out_of_memory = nullptr;     // sparseport.OutOfMemory(Error, MemoryError)

const void* cptr(uintptr_t p) { return reinterpret_cast<const void*>(p); }
void* mptr(uintptr_t p) { return reinterpret_cast<void*>(p); }

// f16 and bf16 are torch.float16 / torch.bfloat16 bit for bit (16-bit storage; the library
// accumulates in float32 and rounds each result once).
sp::ValueType value_type(int tag) {
  if (tag != SPARSEPORT_F32 && tag != SPARSEPORT_F64 && tag != SPARSEPORT_F16 && tag != SPARSEPORT_BF16)
    throw sp::InvalidArgument("sparseport._C: value type tag " + std::to_string(tag) +
                              " is not f32 (1), f64 (2), f16 (3) or bf16 (4)");
  return static_cast<sp::ValueType>(tag);
}
sp::IndexType index_type(int tag) {
  if (tag != SPARSEPORT_I32 && tag != SPARSEPORT_I64)
    throw sp::InvalidArgument("sparseport._C: index type tag " + std::to_string(tag) + " is not i32 (1) or i64 (2)");
  return static_cast<sp::IndexType>(tag);
}

// A CSR as Python passes it: rows, cols, nnz, rowptr, colind, values (0: a pattern), index tag,
// value tag (of the values, or of the op's dense operands for a pattern).
sp::CsrView csr(int64_t rows, int64_t cols, int64_t nnz, uintptr_t rowptr, uintptr_t colind, uintptr_t values,
                int itype, int vtype) {
  return {rows, cols, nnz, cptr(rowptr), cptr(colind), cptr(values), index_type(itype), value_type(vtype)};
}
sp::DenseView dense(int64_t rows, int64_t cols, int64_t ld, uintptr_t data, int vtype) {
  return {rows, cols, ld, cptr(data), value_type(vtype)};
}
sp::DenseMutView dense_mut(int64_t rows, int64_t cols, int64_t ld, uintptr_t data, int vtype) {
  return {rows, cols, ld, mptr(data), value_type(vtype)};
}

// On a lent stream (PyTorch's current one) the op stays queued behind and before PyTorch's own
// work: nothing to wait for. On the context's own stream the results must be there on return.
void finish(const sp::Context& ctx) {
  if (ctx.device_memory() && ctx.stream() == nullptr) ctx.synchronize();
}

// Scratch memory from Python callables (sparseport.torch lends PyTorch's caching allocator):
// alloc(bytes, stream) -> pointer (0: none), release(pointer, bytes, stream). The ops run with the
// GIL released, so each call takes it back for the callback.
struct PyScratch {
  nb::object alloc, release;
};
void* py_scratch_alloc(void* user, size_t bytes, void* stream) {
  nb::gil_scoped_acquire gil;
  try {
    return reinterpret_cast<void*>(
        nb::cast<uintptr_t>(static_cast<PyScratch*>(user)->alloc(bytes, reinterpret_cast<uintptr_t>(stream))));
  } catch (nb::python_error& e) {
    e.discard_as_unraisable("sparseport scratch allocation");
    return nullptr;  // the plugin raises OutOfMemory
  }
}
void py_scratch_release(void* user, void* ptr, size_t bytes, void* stream) {
  nb::gil_scoped_acquire gil;
  try {
    static_cast<PyScratch*>(user)->release(reinterpret_cast<uintptr_t>(ptr), bytes, reinterpret_cast<uintptr_t>(stream));
  } catch (nb::python_error& e) {
    e.discard_as_unraisable("sparseport scratch release");
  }
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const sp::InvalidArgument& e) {
    PyErr_SetString(g_invalid_argument, e.what());
  } catch (const sp::Unsupported& e) {
    PyErr_SetString(g_unsupported, e.what());
  } catch (const sp::OutOfMemory& e) {
    PyErr_SetString(g_out_of_memory, e.what());
  } catch (const sp::Error& e) {
    PyErr_SetString(g_error, e.what());
  }
}

PyObject* new_exception(nb::module_& m, const char* name, PyObject* bases) {
  const std::string full = std::string("sparseport._C.") + name;
  PyObject* t = PyErr_NewException(full.c_str(), bases, nullptr);
  if (t == nullptr) throw nb::python_error();
  m.attr(name) = nb::borrow(t);  // the module keeps a reference; g_* keep theirs for the process
  return t;
}

}  // namespace

NB_MODULE(_C, m) {
  m.doc() = "SparsePort's C++ API over raw pointers (use sparseport.torch)";

  g_error = new_exception(m, "Error", PyExc_RuntimeError);
  const auto two = [](PyObject* a, PyObject* b) { return nb::make_tuple(nb::borrow(a), nb::borrow(b)); };
  g_invalid_argument = new_exception(m, "InvalidArgument", two(g_error, PyExc_ValueError).ptr());
  g_unsupported = new_exception(m, "Unsupported", two(g_error, PyExc_NotImplementedError).ptr());
  g_out_of_memory = new_exception(m, "OutOfMemory", two(g_error, PyExc_MemoryError).ptr());
  nb::register_exception_translator(translate);
  // Contexts stay referenced from sparseport.torch's per-device cache and torch.library's op
  // registry until the interpreter is torn down, after this module: not leaks worth a warning.
  nb::set_leak_warnings(false);

  m.attr("version") = std::string(sp::version());
  m.attr("F32") = static_cast<int>(SPARSEPORT_F32);
  m.attr("F64") = static_cast<int>(SPARSEPORT_F64);
  m.attr("F16") = static_cast<int>(SPARSEPORT_F16);
  m.attr("BF16") = static_cast<int>(SPARSEPORT_BF16);
  m.attr("I32") = static_cast<int>(SPARSEPORT_I32);
  m.attr("I64") = static_cast<int>(SPARSEPORT_I64);

  // [(name, status, reason)] for every backend this library knows, compiled or not.
  m.def("plugins", [] {
    std::vector<std::tuple<std::string, std::string, std::string>> out;
    for (const sp::PluginInfo& p : sp::plugins()) out.emplace_back(p.name, sp::name(p.status), p.reason);
    return out;
  });

  nb::class_<sp::Context>(m, "Context")
      .def_static("create", [](const std::string& backend) { return sp::Context::create(backend); },
                  nb::arg("backend") = "", "backend: reference, openmp, kokkos, cuda or cuda:N ('' = default)")
      .def_prop_ro("backend", &sp::Context::backend)
      .def_prop_ro("device", &sp::Context::device)
      .def_prop_ro("device_memory", &sp::Context::device_memory)
      .def_prop_rw("threads", &sp::Context::threads, &sp::Context::set_threads)
      .def_prop_rw("deterministic", &sp::Context::deterministic, &sp::Context::set_deterministic)
      .def_prop_rw("allow_tf32", &sp::Context::allow_tf32, &sp::Context::set_allow_tf32,
                   "TF32 consent for ops that pass none (sparseport.torch's spmm passes torch's own flag)")
      .def_prop_rw(
          "validate", [](const sp::Context& c) { return std::string(sp::name(c.validate())); },
          [](sp::Context& c, const std::string& v) {
            if (v == "once") return c.set_validate(sp::ValidateMode::once);
            if (v == "always") return c.set_validate(sp::ValidateMode::always);
            if (v == "off") return c.set_validate(sp::ValidateMode::off);
            throw sp::InvalidArgument("sparseport: validate is once, always or off, not '" + v + "'");
          })
      .def_prop_rw(
          "stream", [](const sp::Context& c) { return reinterpret_cast<uintptr_t>(c.stream()); },
          [](sp::Context& c, uintptr_t s) {
            if (reinterpret_cast<void*>(s) != c.stream()) c.set_stream(mptr(s));
          },
          "the cudaStream_t (as an int) every op of this context is ordered on; 0: the context's own")
      .def(
          "set_scratch_allocator",
          [](sp::Context& c, nb::object alloc, nb::object release) {
            // One per context for the process's life (contexts live in sparseport.torch's cache).
            static std::map<const void*, std::unique_ptr<PyScratch>> keep;
            if (alloc.is_none()) {
              c.set_scratch_allocator({});
              keep.erase(c.exec().state);
              return;
            }
            auto& slot = keep[c.exec().state];
            auto next = std::make_unique<PyScratch>(PyScratch{std::move(alloc), std::move(release)});
            c.set_scratch_allocator({&py_scratch_alloc, &py_scratch_release, next.get()});
            slot = std::move(next);
          },
          nb::arg("alloc").none(), nb::arg("release").none(),
          "scratch from Python: alloc(bytes, stream) -> int pointer, release(pointer, bytes, stream); None: the "
          "backend's own")
      .def("synchronize", &sp::Context::synchronize, nb::call_guard<nb::gil_scoped_release>())
      .def("__repr__", [](const sp::Context& c) { return "<sparseport._C.Context " + c.backend() + ">"; });

  m.def(
      "spmm",
      [](const sp::Context& ctx, int64_t rows, int64_t cols, int64_t nnz, uintptr_t rowptr, uintptr_t colind,
         uintptr_t values, int itype, int vtype, uintptr_t b, int64_t b_rows, int64_t b_ld, int64_t f, int btype,
         uintptr_t c, int64_t c_ld, int reduce, std::optional<bool> allow_tf32) {
        sp::SpmmOptions opt;
        opt.reduce = static_cast<sp::Reduce>(reduce);
        opt.allow_tf32 = allow_tf32;
        sp::spmm(ctx, csr(rows, cols, nnz, rowptr, colind, values, itype, vtype), dense(b_rows, f, b_ld, b, btype),
                 dense_mut(rows, f, c_ld, c, btype), opt);
        finish(ctx);
      },
      nb::call_guard<nb::gil_scoped_release>(),
      "spmm(ctx, rows, cols, nnz, rowptr, colind, values, itype, vtype, B, B_rows, B_ld, F, Btype, C, C_ld, reduce, "
      "allow_tf32): allow_tf32 True/False is the call's TF32 consent, None the context's");

  // The C++ side of the per-call overhead measurement (python/tests/bench_overhead.py): the median
  // time of one sparseport::spmm call, timed in C++ over `repeats` calls, in seconds.
  m.def(
      "spmm_median_seconds",
      [](const sp::Context& ctx, int64_t rows, int64_t cols, int64_t nnz, uintptr_t rowptr, uintptr_t colind,
         uintptr_t values, int itype, int vtype, uintptr_t b, int64_t b_rows, int64_t b_ld, int64_t f, int btype,
         uintptr_t c, int64_t c_ld, int reduce, int repeats) {
        sp::SpmmOptions opt;
        opt.reduce = static_cast<sp::Reduce>(reduce);
        const sp::CsrView a = csr(rows, cols, nnz, rowptr, colind, values, itype, vtype);
        std::vector<double> t(static_cast<size_t>(repeats > 0 ? repeats : 1));
        for (double& s : t) {
          const auto t0 = std::chrono::steady_clock::now();
          sp::spmm(ctx, a, dense(b_rows, f, b_ld, b, btype), dense_mut(rows, f, c_ld, c, btype), opt);
          finish(ctx);
          s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        }
        std::nth_element(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(t.size() / 2), t.end());
        return t[t.size() / 2];
      },
      nb::call_guard<nb::gil_scoped_release>());

  m.def(
      "sddmm",
      [](const sp::Context& ctx, int64_t rows, int64_t cols, int64_t nnz, uintptr_t rowptr, uintptr_t colind,
         uintptr_t values, int itype, int vtype, uintptr_t x, int64_t x_rows, int64_t x_ld, uintptr_t y,
         int64_t y_rows, int64_t y_ld, int64_t f, int xtype, uintptr_t out) {
        sp::sddmm(ctx, csr(rows, cols, nnz, rowptr, colind, values, itype, vtype), dense(x_rows, f, x_ld, x, xtype),
                  dense(y_rows, f, y_ld, y, xtype), dense_mut(nnz, 1, 1, out, xtype));
        finish(ctx);
      },
      nb::call_guard<nb::gil_scoped_release>(),
      "sddmm(ctx, rows, cols, nnz, rowptr, colind, values, itype, vtype, X, X_rows, X_ld, Y, Y_rows, Y_ld, F, Xtype, "
      "out)");

  m.def(
      "index_reduce",
      [](const sp::Context& ctx, bool sorted, int64_t n, uintptr_t index, int itype, uintptr_t src, int64_t src_ld,
         int64_t f, int vtype, uintptr_t out, int64_t segments, int reduce) {
        sp::ReduceOptions opt;
        opt.reduce = static_cast<sp::Reduce>(reduce);
        const sp::IndexView idx{n, cptr(index), index_type(itype)};
        const sp::DenseView s = dense(n, f, src_ld, src, vtype);
        const sp::DenseMutView o = dense_mut(segments, f, f > 0 ? f : 1, out, vtype);
        if (sorted)
          sp::segment_reduce(ctx, idx, s, o, opt);
        else
          sp::scatter_reduce(ctx, idx, s, o, opt);
        finish(ctx);
      },
      nb::call_guard<nb::gil_scoped_release>(),
      "index_reduce(ctx, sorted, E, index, itype, src, src_ld, F, vtype, out, segments, reduce): segment_reduce "
      "(sorted) or scatter_reduce");

  // The CSR on which a reduce over E messages is an spmm (sparseport::SegmentCsr), built from an
  // index array (E entries into `segments`, itype) for messages of vtype, in ctx's memory.
  // sparseport.torch keeps one per index tensor; the index array must stay alive and unchanged
  // while it serves calls (they check it by address and size). Built once, then read by calls on
  // whatever stream is current then: the constructor waits for the build even on a lent stream.
  nb::class_<sp::SegmentCsr>(m, "SegmentCsr")
      .def(
          "__init__",
          [](sp::SegmentCsr* self, const sp::Context& ctx, int64_t n, uintptr_t index, int itype, int64_t segments,
             int vtype) {
            new (self) sp::SegmentCsr(ctx, {n, cptr(index), index_type(itype)}, segments, value_type(vtype));
            if (ctx.device_memory()) ctx.synchronize();
          },
          nb::call_guard<nb::gil_scoped_release>(), "SegmentCsr(ctx, E, index, itype, segments, vtype)");

  // segment_reduce (sorted) / scatter_reduce max or min recording each output element's winner
  // (sparseport::segment_reduce_arg / scatter_reduce_arg): out and arg are segments x F with ld F,
  // arg in the index type (segment: the message; scatter: its position in the SegmentCsr). csr:
  // the SegmentCsr of this index and value type, or None (a temporary one per call).
  m.def(
      "index_reduce_arg",
      [](const sp::Context& ctx, bool sorted, int64_t n, uintptr_t index, int itype, uintptr_t src, int64_t src_ld,
         int64_t f, int vtype, uintptr_t out, uintptr_t arg, int64_t segments, int reduce, const sp::SegmentCsr* seg) {
        sp::SegmentArgOptions opt;
        opt.reduce = static_cast<sp::Reduce>(reduce);
        opt.csr = seg;
        const int64_t ld = f > 0 ? f : 1;
        const sp::IndexView idx{n, cptr(index), index_type(itype)};
        const sp::DenseView s = dense(n, f, src_ld, src, vtype);
        const sp::DenseMutView o = dense_mut(segments, f, ld, out, vtype);
        const sp::ArgMutView a{segments, f, ld, mptr(arg), index_type(itype)};
        if (sorted)
          sp::segment_reduce_arg(ctx, idx, s, o, a, opt);
        else
          sp::scatter_reduce_arg(ctx, idx, s, o, a, opt);
        finish(ctx);
      },
      nb::arg("ctx"), nb::arg("sorted"), nb::arg("n"), nb::arg("index"), nb::arg("itype"), nb::arg("src"),
      nb::arg("src_ld"), nb::arg("f"), nb::arg("vtype"), nb::arg("out"), nb::arg("arg"), nb::arg("segments"),
      nb::arg("reduce"), nb::arg("csr").none(), nb::call_guard<nb::gil_scoped_release>(),
      "index_reduce_arg(ctx, sorted, E, index, itype, src, src_ld, F, vtype, out, arg, segments, reduce, csr)");

  // Their gradient for every reduce (sparseport::segment_reduce_backward / scatter_reduce_backward):
  // dsrc (E x F, ld F) from dout (segments x F); arg (segments x F, ld F, the index type): the
  // forward's, for max/min (read only then). csr: as for index_reduce_arg.
  m.def(
      "index_reduce_backward",
      [](const sp::Context& ctx, bool sorted, int64_t n, uintptr_t index, int itype, uintptr_t dout, int64_t dout_ld,
         int64_t f, int vtype, uintptr_t dsrc, int64_t segments, int reduce, uintptr_t arg, const sp::SegmentCsr* seg) {
        const int64_t ld = f > 0 ? f : 1;
        sp::SegmentBackwardOptions opt;
        opt.reduce = static_cast<sp::Reduce>(reduce);
        opt.csr = seg;
        if (opt.reduce == sp::Reduce::max || opt.reduce == sp::Reduce::min)  // (an empty arg has address 0)
          opt.arg = {segments, f, ld, cptr(arg), index_type(itype)};
        const sp::IndexView idx{n, cptr(index), index_type(itype)};
        const sp::DenseView d = dense(segments, f, dout_ld, dout, vtype);
        const sp::DenseMutView ds = dense_mut(n, f, ld, dsrc, vtype);
        if (sorted)
          sp::segment_reduce_backward(ctx, idx, d, ds, opt);
        else
          sp::scatter_reduce_backward(ctx, idx, d, ds, opt);
        finish(ctx);
      },
      nb::arg("ctx"), nb::arg("sorted"), nb::arg("n"), nb::arg("index"), nb::arg("itype"), nb::arg("dout"),
      nb::arg("dout_ld"), nb::arg("f"), nb::arg("vtype"), nb::arg("dsrc"), nb::arg("segments"), nb::arg("reduce"),
      nb::arg("arg"), nb::arg("csr").none(), nb::call_guard<nb::gil_scoped_release>(),
      "index_reduce_backward(ctx, sorted, E, index, itype, dout, dout_ld, F, vtype, dsrc, segments, reduce, arg, csr)");

  m.def(
      "csr_attention",
      [](const sp::Context& ctx, int64_t rows, int64_t cols, int64_t nnz, uintptr_t rowptr, uintptr_t colind,
         int itype, uintptr_t q, int64_t q_rows, int64_t q_ld, uintptr_t k, int64_t k_rows, int64_t k_ld, int64_t f,
         uintptr_t v, int64_t v_rows, int64_t v_ld, int64_t fv, int vtype, uintptr_t out, double scale) {
        sp::AttentionOptions opt;
        opt.scale = scale;
        sp::csr_attention(ctx, csr(rows, cols, nnz, rowptr, colind, 0, itype, vtype), dense(q_rows, f, q_ld, q, vtype),
                          dense(k_rows, f, k_ld, k, vtype), dense(v_rows, fv, v_ld, v, vtype),
                          dense_mut(rows, fv, fv > 0 ? fv : 1, out, vtype), opt);
        finish(ctx);
      },
      nb::call_guard<nb::gil_scoped_release>(),
      "csr_attention(ctx, rows, cols, nnz, rowptr, colind, itype, Q, Q_rows, Q_ld, K, K_rows, K_ld, F, V, V_rows, "
      "V_ld, Fv, vtype, out, scale)");

  // spmm max/min recording each output element's winning entry (sparseport::spmm_arg): arg is
  // rows x F in A's index type, ld F.
  m.def(
      "spmm_arg",
      [](const sp::Context& ctx, int64_t rows, int64_t cols, int64_t nnz, uintptr_t rowptr, uintptr_t colind,
         uintptr_t values, int itype, int vtype, uintptr_t b, int64_t b_rows, int64_t b_ld, int64_t f, int btype,
         uintptr_t c, uintptr_t arg, int reduce, std::optional<bool> allow_tf32) {
        sp::SpmmOptions opt;
        opt.reduce = static_cast<sp::Reduce>(reduce);
        opt.allow_tf32 = allow_tf32;
        const int64_t ld = f > 0 ? f : 1;
        sp::spmm_arg(ctx, csr(rows, cols, nnz, rowptr, colind, values, itype, vtype), dense(b_rows, f, b_ld, b, btype),
                     dense_mut(rows, f, ld, c, btype), {rows, f, ld, mptr(arg), index_type(itype)}, opt);
        finish(ctx);
      },
      nb::call_guard<nb::gil_scoped_release>(),
      "spmm_arg(ctx, rows, cols, nnz, rowptr, colind, values, itype, vtype, B, B_rows, B_ld, F, Btype, C, arg, reduce, "
      "allow_tf32)");

  // The gradients of spmm max/min through arg (sparseport::spmm_backward): dB (b_rows x F, ld F)
  // and dvalues (nnz), each skipped when its pointer is 0. dC and B are contiguous.
  m.def(
      "spmm_arg_backward",
      [](const sp::Context& ctx, int64_t rows, int64_t cols, int64_t nnz, uintptr_t rowptr, uintptr_t colind,
         uintptr_t values, int itype, int vtype, uintptr_t b, int64_t b_ld, int64_t f, uintptr_t dc, uintptr_t arg,
         uintptr_t db, uintptr_t dvalues, int reduce, std::optional<bool> allow_tf32) {
        const int64_t ld = f > 0 ? f : 1;
        sp::SpmmBackwardOptions opt;
        opt.reduce = static_cast<sp::Reduce>(reduce);
        opt.allow_tf32 = allow_tf32;
        opt.arg = {rows, f, ld, cptr(arg), index_type(itype)};
        const sp::SpmmGrads grads{db != 0 ? dense_mut(cols, f, ld, db, vtype) : sp::DenseMutView{},
                                  dvalues != 0 ? dense_mut(nnz, 1, 1, dvalues, vtype) : sp::DenseMutView{}};
        sp::spmm_backward(ctx, csr(rows, cols, nnz, rowptr, colind, values, itype, vtype), dense(cols, f, b_ld, b, vtype),
                          dense(rows, f, ld, dc, vtype), grads, opt);
        finish(ctx);
      },
      nb::call_guard<nb::gil_scoped_release>(),
      "spmm_arg_backward(ctx, rows, cols, nnz, rowptr, colind, values, itype, vtype, B, B_ld, F, dC, arg, dB, dvalues, "
      "reduce, allow_tf32)");

  // A^T as a pattern and the position in A of each of its entries (sparseport::Transpose), written
  // into caller-allocated arrays in ctx's memory: rowptr (cols + 1), colind (nnz), positions (nnz),
  // all of A's index type.
  m.def(
      "csr_transpose",
      [](const sp::Context& ctx, int64_t rows, int64_t cols, int64_t nnz, uintptr_t rowptr, uintptr_t colind,
         int itype, uintptr_t out_rowptr, uintptr_t out_colind, uintptr_t out_positions) {
        const sp::Transpose t(ctx, csr(rows, cols, nnz, rowptr, colind, 0, itype, SPARSEPORT_F32));
        const size_t isz = static_cast<size_t>(sp::size_of(index_type(itype)));
        const sp::CsrView p = t.pattern();
        // copy_to_backend copies within the backend's memory too (memcpy; cudaMemcpyDefault on cuda).
        ctx.copy_to_backend(mptr(out_rowptr), p.rowptr, static_cast<size_t>(cols + 1) * isz);
        if (nnz > 0) {
          ctx.copy_to_backend(mptr(out_colind), p.colind, static_cast<size_t>(nnz) * isz);
          ctx.copy_to_backend(mptr(out_positions), t.positions().data, static_cast<size_t>(nnz) * isz);
        }
        ctx.synchronize();  // before t's buffers go
      },
      nb::call_guard<nb::gil_scoped_release>(),
      "csr_transpose(ctx, rows, cols, nnz, rowptr, colind, itype, out_rowptr, out_colind, out_positions)");
}
