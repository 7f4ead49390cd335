// SPDX-License-Identifier: Apache-2.0
// sparseport::dist::spmm against PETSc's MatMatMult (AIJ x dense), side by side in one run, on the
// same ranks, the same contiguous row partition, the same matrix and the same B, in double
// precision (issue 19). Built only where pkg-config finds PETSc (benchmarks/CMakeLists.txt);
// benchmarks/petsc/run.sh installs Debian's libpetsc-real-dev, builds this and runs the comparison.
//
//   mpirun -np P sparseport_dist_vs_petsc [--F 32,128] [--reps N] [--warmup W] [--threads T] [--verbose]
//                                          GRAPH... [--petsc PETSC_OPTIONS...]
//
// GRAPH: a generator spec or a Matrix Market file, loaded as the benchmark registry does
// (benchmarks/datasets.cpp): generators with seed 1, files with sort_and_merge, and a pattern file
// gets values uniform in [0.5, 1.5) (seed 7); here in double. Every rank loads the whole matrix
// (deterministic) and keeps the rows dist::partition_rows_by_entries gives it; both libraries are
// built from those same local CSR rows: dist::DistCsr::from_local_rows, and a MATAIJ with the same
// local row and column counts (MatSeqAIJSetPreallocationCSR / MatMPIAIJSetPreallocationCSR: a
// SeqAIJ at P = 1, an MPIAIJ above, PETSc's own choice for MATAIJ). B (cols x F, uniform in
// [-1, 1), seed 11) is made on rank 0 and scattered by rows (dist::scatter_rows); PETSc gets the
// same values in its MATDENSE (column-major, as PETSc stores dense matrices; SparsePort is
// row-major: each library has its native layout, and the copies are not timed).
//
// Timing: PETSc's C = A*B with MatMatMult(MAT_INITIAL_MATRIX) once, then MatMatMult(MAT_REUSE_MATRIX)
// per call (the reuse path of PETSc's MatMatMult examples, e.g. src/mat/tests/ex109.c); SparsePort's
// dist::spmm (sum, alpha 1, beta 0) on a DistCsr built once (halo plan, persistent requests), the
// block decisions taken by the scheduler in the warm-up calls. W warm-up calls of each, then N
// timed calls alternating PETSc and SparsePort (so drift of a shared VM hits both alike); each call
// between two MPI_Barriers, timed with MPI_Wtime on every rank, the slowest rank's time kept. The
// median over the N calls is reported. After timing, both C's are compared on every rank:
// max_rel_err = max |C_sparseport - C_petsc| / max |C_petsc| over all ranks and entries.
//
// Threads: SparsePort's openmp context runs T threads per rank (default: OMP_NUM_THREADS when set,
// else the machine's cores / P). PETSc runs one thread per rank whatever T is when it was built
// without OpenMP (Debian's is; reported as petsc_openmp). Launch with `mpirun --bind-to none` when
// T > 1 (Open MPI binds each rank to one core at P <= 2).
//
// Output: one JSON line per (graph, F) on rank 0's stdout; progress on stderr.
#include <petscmat.h>
#include <petscsys.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "sparseport/dist.hpp"
#include "sparseport/graph.hpp"
#include "sparseport/sparseport.hpp"

namespace {

using namespace sparseport;
using Index = int32_t;  // the suites' index type; Debian's PETSc has 32-bit PetscInt too

// The benchmark registry's seeds (benchmarks/datasets.hpp) and a fixed one for B.
constexpr uint64_t kGeneratorSeed = 1;
constexpr uint64_t kPatternValueSeed = 7;
constexpr uint64_t kDenseSeed = 11;

void petsc_check(PetscErrorCode code, const char* what) {
  if (code != 0) throw std::runtime_error(std::string("dist_vs_petsc: PETSc call ") + what + " failed with code " +
                                          std::to_string(static_cast<int>(code)));
}
#define SPARSEPORT_PETSC_CHECK(call) petsc_check((call), #call)

struct Options {
  std::vector<int64_t> features{32, 128};
  int reps = 20;
  int warmup = 3;
  int threads = 0;  // 0: OMP_NUM_THREADS, else cores / ranks
  bool verbose = false;  // every call's time on stderr
  std::vector<std::string> graphs;
  std::vector<std::string> petsc_args;
};

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> out;
  size_t pos = 0;
  while (pos <= s.size()) {
    const size_t comma = s.find(',', pos);
    const std::string item = s.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    if (!item.empty()) out.push_back(std::atoll(item.c_str()));
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--petsc") {
      for (++i; i < argc; ++i) o.petsc_args.emplace_back(argv[i]);
    } else if (a == "--F" && has_value) {
      o.features = parse_list(argv[++i]);
    } else if (a == "--reps" && has_value) {
      o.reps = std::atoi(argv[++i]);
    } else if (a == "--warmup" && has_value) {
      o.warmup = std::atoi(argv[++i]);
    } else if (a == "--threads" && has_value) {
      o.threads = std::atoi(argv[++i]);
    } else if (a == "--verbose") {
      o.verbose = true;
    } else if (a.rfind("--", 0) == 0) {
      throw std::invalid_argument("dist_vs_petsc: unknown option " + a +
                                  " (options: --F LIST --reps N --warmup W --threads T --verbose, then GRAPH..., "
                                  "then --petsc PETSC_OPTIONS...)");
    } else {
      o.graphs.push_back(a);
    }
  }
  if (o.graphs.empty()) throw std::invalid_argument("dist_vs_petsc: name at least one GRAPH (generator spec or .mtx file)");
  if (o.reps < 1 || o.warmup < 0) throw std::invalid_argument("dist_vs_petsc: need --reps >= 1 and --warmup >= 0");
  for (const int64_t f : o.features)
    if (f < 1) throw std::invalid_argument("dist_vs_petsc: every F must be >= 1");
  return o;
}

// A file's name without folder and .mtx[.gz]; a generator spec as given.
std::string label_of(const std::string& g) {
  if (is_generator_spec(g)) return g;
  std::string s = g.substr(g.find_last_of('/') == std::string::npos ? 0 : g.find_last_of('/') + 1);
  for (const char* ext : {".gz", ".mtx"})
    if (s.size() > std::string(ext).size() && s.compare(s.size() - std::string(ext).size(), std::string::npos, ext) == 0)
      s.resize(s.size() - std::string(ext).size());
  return s;
}

HostCsr<Index, double> load(const std::string& g, bool* synthetic_values) {
  HostCsr<Index, double> a;
  if (is_generator_spec(g)) {
    a = generate<Index, double>(g, GenOptions{kGeneratorSeed});
  } else {
    MmReadOptions opt;
    opt.sort_and_merge = true;
    a = read_matrix_market<Index, double>(g, opt);
  }
  *synthetic_values = a.is_pattern() && a.nnz() > 0;
  if (*synthetic_values) {
    a.values.resize(static_cast<size_t>(a.nnz()));
    fill_random(a.values, kPatternValueSeed, 0.5, 1.5);
  }
  return a;
}

// Rows [r0, r1) of a, global column ids kept.
HostCsr<Index, double> row_slice(const HostCsr<Index, double>& a, int64_t r0, int64_t r1) {
  HostCsr<Index, double> s;
  s.rows = r1 - r0;
  s.cols = a.cols;
  const Index e0 = a.rowptr[static_cast<size_t>(r0)], e1 = a.rowptr[static_cast<size_t>(r1)];
  s.rowptr.resize(static_cast<size_t>(s.rows) + 1);
  for (int64_t i = 0; i <= s.rows; ++i) s.rowptr[static_cast<size_t>(i)] = a.rowptr[static_cast<size_t>(r0 + i)] - e0;
  s.colind.assign(a.colind.begin() + e0, a.colind.begin() + e1);
  s.values.assign(a.values.begin() + e0, a.values.begin() + e1);
  return s;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double max_over_ranks(double x) {
  double out = 0;
  MPI_Allreduce(&x, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return out;
}

// One call between barriers; the slowest rank's milliseconds.
double timed_call(const std::function<void()>& call) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = MPI_Wtime();
  call();
  const double ms = 1e3 * (MPI_Wtime() - t0);
  MPI_Barrier(MPI_COMM_WORLD);
  return max_over_ranks(ms);
}

void note(int rank, const std::string& s) {
  if (rank == 0) std::fprintf(stderr, "dist_vs_petsc: %s\n", s.c_str());
}

void run_graph(const Options& o, const std::string& g, const Context& ctx, int threads) {
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  const std::string label = label_of(g);
  note(rank, "loading " + g + " on every rank");
  bool synthetic = false;
  const HostCsr<Index, double> a = load(g, &synthetic);
  const dist::Partition part = dist::partition_rows_by_entries(a.view(), ranks);
  const int64_t r0 = part.row_starts[static_cast<size_t>(rank)], r1 = part.row_starts[static_cast<size_t>(rank) + 1];
  const int64_t m_local = r1 - r0, n_local = part.cols_of(rank);
  HostCsr<Index, double> local = row_slice(a, r0, r1);

  // PETSc's AIJ from the same local rows (PetscInt copies; the preallocation copies them again).
  std::vector<PetscInt> pi(local.rowptr.begin(), local.rowptr.end()), pj(local.colind.begin(), local.colind.end());
  Mat pa = nullptr;
  SPARSEPORT_PETSC_CHECK(MatCreate(PETSC_COMM_WORLD, &pa));
  SPARSEPORT_PETSC_CHECK(MatSetSizes(pa, static_cast<PetscInt>(m_local), static_cast<PetscInt>(n_local), static_cast<PetscInt>(a.rows),
                       static_cast<PetscInt>(a.cols)));
  SPARSEPORT_PETSC_CHECK(MatSetType(pa, MATAIJ));
  SPARSEPORT_PETSC_CHECK(MatSeqAIJSetPreallocationCSR(pa, pi.data(), pj.data(), local.values.data()));
  SPARSEPORT_PETSC_CHECK(MatMPIAIJSetPreallocationCSR(pa, pi.data(), pj.data(), local.values.data()));
  MatType a_type = nullptr;
  SPARSEPORT_PETSC_CHECK(MatGetType(pa, &a_type));
  const std::string petsc_a_type = a_type;
  pi.clear();
  pj.clear();
  pi.shrink_to_fit();
  pj.shrink_to_fit();

  // SparsePort's distributed matrix from the same rows.
  const dist::DistCsr<Index, double> da =
      dist::DistCsr<Index, double>::from_local_rows(MPI_COMM_WORLD, std::move(local), part.row_starts);
  int64_t halo_rows = 0;
  const int64_t my_halo_rows = da.halo().send_total();
  MPI_Allreduce(&my_halo_rows, &halo_rows, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);

  for (const int64_t f : o.features) {
    note(rank, label + ": F = " + std::to_string(f) + ", " + std::to_string(ranks) + " rank(s) x " +
                   std::to_string(threads) + " SparsePort thread(s)");
    // B: made on rank 0, scattered by rows; PETSc's copy column-major.
    HostDense<double> global_b;
    DenseView global_view{0, 0, 0, nullptr, value_type_of<double>()};
    if (rank == 0) {
      global_b = HostDense<double>(a.cols, f);
      fill_random(global_b, kDenseSeed, -1.0, 1.0);
      global_view = global_b.view();
    }
    const HostDense<double> b = dist::scatter_rows<double>(MPI_COMM_WORLD, global_view, part.col_starts);
    global_b = HostDense<double>();

    Mat pb = nullptr, pc = nullptr;
    SPARSEPORT_PETSC_CHECK(MatCreateDense(PETSC_COMM_WORLD, static_cast<PetscInt>(n_local), PETSC_DECIDE,
                            static_cast<PetscInt>(a.cols), static_cast<PetscInt>(f), nullptr, &pb));
    {
      PetscScalar* bp = nullptr;
      PetscInt lda = 0;
      SPARSEPORT_PETSC_CHECK(MatDenseGetLDA(pb, &lda));
      SPARSEPORT_PETSC_CHECK(MatDenseGetArrayWrite(pb, &bp));
      for (int64_t i = 0; i < n_local; ++i)
        for (int64_t j = 0; j < f; ++j) bp[i + j * lda] = b(i, j);
      SPARSEPORT_PETSC_CHECK(MatDenseRestoreArrayWrite(pb, &bp));
    }
    SPARSEPORT_PETSC_CHECK(MatAssemblyBegin(pb, MAT_FINAL_ASSEMBLY));
    SPARSEPORT_PETSC_CHECK(MatAssemblyEnd(pb, MAT_FINAL_ASSEMBLY));
    MatType b_type = nullptr;
    SPARSEPORT_PETSC_CHECK(MatGetType(pb, &b_type));
    const std::string petsc_b_type = b_type;

    SPARSEPORT_PETSC_CHECK(MatMatMult(pa, pb, MAT_INITIAL_MATRIX, PETSC_DEFAULT, &pc));
    HostDense<double> c(m_local, f);
    dist::CallStats st;
    const auto petsc_call = [&] { SPARSEPORT_PETSC_CHECK(MatMatMult(pa, pb, MAT_REUSE_MATRIX, PETSC_DEFAULT, &pc)); };
    const auto sp_call = [&] { dist::spmm(ctx, da, b.view(), c.mut(), SpmmOptions{Reduce::sum, 1.0, 0.0, {}}, &st); };

    for (int w = 0; w < o.warmup; ++w) {
      timed_call(petsc_call);
      timed_call(sp_call);
    }
    std::vector<double> t_petsc, t_sp, t_sp_comm, t_sp_compute;
    for (int r = 0; r < o.reps; ++r) {
      t_petsc.push_back(timed_call(petsc_call));
      t_sp.push_back(timed_call(sp_call));
      t_sp_comm.push_back(max_over_ranks(st.comm_ms()));
      t_sp_compute.push_back(max_over_ranks(st.compute_ms()));
    }

    // Both results on every rank: max |diff| over max |C_petsc|.
    double diff = 0, scale = 0;
    {
      const PetscScalar* cp = nullptr;
      PetscInt lda = 0;
      SPARSEPORT_PETSC_CHECK(MatDenseGetLDA(pc, &lda));
      SPARSEPORT_PETSC_CHECK(MatDenseGetArrayRead(pc, &cp));
      for (int64_t i = 0; i < m_local; ++i)
        for (int64_t j = 0; j < f; ++j) {
          const double want = cp[i + j * lda];
          diff = std::max(diff, std::abs(c(i, j) - want));
          scale = std::max(scale, std::abs(want));
        }
      SPARSEPORT_PETSC_CHECK(MatDenseRestoreArrayRead(pc, &cp));
    }
    diff = max_over_ranks(diff);
    scale = max_over_ranks(scale);
    const double rel = scale > 0 ? diff / scale : diff;
    SPARSEPORT_PETSC_CHECK(MatDestroy(&pc));
    SPARSEPORT_PETSC_CHECK(MatDestroy(&pb));

    if (o.verbose && rank == 0) {
      std::string line = label + " F=" + std::to_string(f) + " ms per call (petsc / sparseport):";
      char item[64];
      for (size_t r = 0; r < t_sp.size(); ++r) {
        std::snprintf(item, sizeof item, " %.3f/%.3f", t_petsc[r], t_sp[r]);
        line += item;
      }
      note(rank, line);
    }
    const double petsc_ms = median(t_petsc), sp_ms = median(t_sp);
    if (rank == 0) {
      std::printf(
          "{\"matrix\": \"%s\", \"rows\": %lld, \"nnz\": %lld, \"synthetic_values\": %s, \"F\": %lld, \"ranks\": %d, "
          "\"threads\": %d, \"petsc_threads\": 1, \"petsc_ms\": %.4f, \"sparseport_ms\": %.4f, \"speedup\": %.3f, "
          "\"petsc_min_ms\": %.4f, \"sparseport_min_ms\": %.4f, \"sparseport_comm_ms\": %.4f, "
          "\"sparseport_compute_ms\": %.4f, \"sparseport_variant\": \"%s\", \"halo_bytes\": %lld, "
          "\"max_rel_err\": %.3e, \"petsc_version\": \"%d.%d.%d\", \"petsc_openmp\": %s, \"petsc_types\": \"%s x %s\", "
          "\"reps\": %d, \"warmup\": %d}\n",
          label.c_str(), static_cast<long long>(a.rows), static_cast<long long>(a.nnz()), synthetic ? "true" : "false",
          static_cast<long long>(f), ranks, threads, petsc_ms, sp_ms, petsc_ms / sp_ms,
          *std::min_element(t_petsc.begin(), t_petsc.end()), *std::min_element(t_sp.begin(), t_sp.end()),
          median(t_sp_comm), median(t_sp_compute), st.local_decision.variant.c_str(),
          static_cast<long long>(halo_rows * f * static_cast<int64_t>(sizeof(double))), rel, PETSC_VERSION_MAJOR,
          PETSC_VERSION_MINOR, PETSC_VERSION_SUBMINOR,
#if defined(PETSC_HAVE_OPENMP)
          "true",
#else
          "false",
#endif
          petsc_a_type.c_str(), petsc_b_type.c_str(), o.reps, o.warmup);
      std::fflush(stdout);
    }
    // A wrong product must not pass as a speedup.
    if (!(rel <= 1e-10)) {
      note(rank, label + ": the two results differ (max_rel_err " + std::to_string(rel) + ")");
      throw std::runtime_error("dist_vs_petsc: results differ");
    }
  }
  SPARSEPORT_PETSC_CHECK(MatDestroy(&pa));
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
  // PETSc sees only what follows --petsc (e.g. -log_view, -matmatmult_Bbn N).
  std::vector<char*> pargv{argv[0]};
  for (std::string& s : o.petsc_args) pargv.push_back(s.data());
  pargv.push_back(nullptr);
  int pargc = static_cast<int>(pargv.size()) - 1;
  char** pargs = pargv.data();
  if (PetscInitialize(&pargc, &pargs, nullptr, nullptr) != 0) return 1;
  int rc = 0;
  try {
    int ranks = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int threads = o.threads;
    if (threads <= 0) {
      const char* env = std::getenv("OMP_NUM_THREADS");
      threads = env != nullptr && std::atoi(env) > 0
                    ? std::atoi(env)
                    : std::max(1, static_cast<int>(std::thread::hardware_concurrency()) / ranks);
    }
    Context ctx = Context::create("openmp");
    ctx.set_threads(threads);
    for (const std::string& g : o.graphs) run_graph(o, g, ctx, threads);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "dist_vs_petsc: error: %s\n", e.what());
    rc = 1;
  }
  if (rc != 0) MPI_Abort(MPI_COMM_WORLD, rc);
  PetscFinalize();
  return rc;
}
