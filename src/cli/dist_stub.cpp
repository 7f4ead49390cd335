// SPDX-License-Identifier: Apache-2.0
// `sparseport run --dist` in a program built without MPI: refused, saying why.
#include "dist_run.hpp"

namespace sparseport::cli {

namespace {
[[noreturn]] void refuse() {
  throw NotCompiled(
      "sparseport run --dist: this sparseport was built without MPI (SPARSEPORT_ENABLE_MPI=OFF; Debian: "
      "apt-get install libopenmpi-dev openmpi-bin, then configure again)");
}
}  // namespace

std::unique_ptr<DistSession> start_dist_session() { refuse(); }

template <class I, class V>
std::unique_ptr<Workload> make_dist_workload(DistSession&, const Context&, const HostCsr<I, V>&, const WorkloadSpec&,
                                             const DistOptions&) {
  refuse();
}

template std::unique_ptr<Workload> make_dist_workload(DistSession&, const Context&, const HostCsr<int32_t, float>&,
                                                      const WorkloadSpec&, const DistOptions&);
template std::unique_ptr<Workload> make_dist_workload(DistSession&, const Context&, const HostCsr<int32_t, double>&,
                                                      const WorkloadSpec&, const DistOptions&);
template std::unique_ptr<Workload> make_dist_workload(DistSession&, const Context&, const HostCsr<int64_t, float>&,
                                                      const WorkloadSpec&, const DistOptions&);
template std::unique_ptr<Workload> make_dist_workload(DistSession&, const Context&, const HostCsr<int64_t, double>&,
                                                      const WorkloadSpec&, const DistOptions&);

}  // namespace sparseport::cli
