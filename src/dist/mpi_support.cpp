// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <climits>
#include <string>
#include <vector>

#include "src/dist/ops_internal.hpp"

namespace sparseport::dist::detail {
namespace {

const char* error_class_name(int cls) {
  switch (cls) {
    case MPI_ERR_BUFFER:
      return "MPI_ERR_BUFFER";
    case MPI_ERR_COUNT:
      return "MPI_ERR_COUNT";
    case MPI_ERR_TYPE:
      return "MPI_ERR_TYPE";
    case MPI_ERR_TAG:
      return "MPI_ERR_TAG";
    case MPI_ERR_COMM:
      return "MPI_ERR_COMM";
    case MPI_ERR_RANK:
      return "MPI_ERR_RANK";
    case MPI_ERR_REQUEST:
      return "MPI_ERR_REQUEST";
    case MPI_ERR_ROOT:
      return "MPI_ERR_ROOT";
    case MPI_ERR_TRUNCATE:
      return "MPI_ERR_TRUNCATE";
    case MPI_ERR_IN_STATUS:
      return "MPI_ERR_IN_STATUS";
    case MPI_ERR_PENDING:
      return "MPI_ERR_PENDING";
    case MPI_ERR_NO_MEM:
      return "MPI_ERR_NO_MEM";
    case MPI_ERR_INTERN:
      return "MPI_ERR_INTERN";
    case MPI_ERR_OTHER:
      return "MPI_ERR_OTHER";
    default:
      return "MPI_ERR";
  }
}

// 1 GiB per message keeps every count far below INT_MAX.
constexpr int64_t kChunkBytes = int64_t{1} << 30;

}  // namespace

void check_mpi(int code, const char* call, const std::string& where) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) len = 0;
  int cls = MPI_ERR_UNKNOWN;
  if (MPI_Error_class(code, &cls) != MPI_SUCCESS) cls = MPI_ERR_UNKNOWN;
  throw BackendError(where + ": " + call + " failed: " + std::string(text, static_cast<size_t>(std::max(len, 0))), code,
                     error_class_name(cls));
}

MPI_Comm duplicate(MPI_Comm comm, const std::string& where) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized || mpi_finalized())
    throw InvalidArgument(where +
                          ": MPI is not initialized (call MPI_Init first, and MPI_Finalize only after the last "
                          "distributed object is gone)");
  MPI_Comm dup = MPI_COMM_NULL;
  check_mpi(MPI_Comm_dup(comm, &dup), "MPI_Comm_dup", where);
  if (MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN) != MPI_SUCCESS) {
    free_comm(dup);
    throw BackendError(where + ": MPI_Comm_set_errhandler failed", MPI_ERR_OTHER, "MPI_ERR_OTHER");
  }
  return dup;
}

bool mpi_finalized() noexcept {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

void free_comm(MPI_Comm& comm) noexcept {
  if (comm != MPI_COMM_NULL && !mpi_finalized()) MPI_Comm_free(&comm);
  comm = MPI_COMM_NULL;
}

int rank_of(MPI_Comm comm) {
  int r = 0;
  check_mpi(MPI_Comm_rank(comm, &r), "MPI_Comm_rank", "sparseport::dist");
  return r;
}

int size_of(MPI_Comm comm) {
  int s = 0;
  check_mpi(MPI_Comm_size(comm, &s), "MPI_Comm_size", "sparseport::dist");
  return s;
}

void send_bytes(MPI_Comm comm, const void* data, int64_t bytes, int dest, int tag, const std::string& where) {
  const char* p = static_cast<const char*>(data);
  for (int64_t off = 0; off < bytes; off += kChunkBytes) {
    const int n = static_cast<int>(std::min(kChunkBytes, bytes - off));
    check_mpi(MPI_Send(p + off, n, MPI_BYTE, dest, tag, comm), "MPI_Send", where);
  }
}

void recv_bytes(MPI_Comm comm, void* data, int64_t bytes, int source, int tag, const std::string& where) {
  char* p = static_cast<char*>(data);
  for (int64_t off = 0; off < bytes; off += kChunkBytes) {
    const int n = static_cast<int>(std::min(kChunkBytes, bytes - off));
    check_mpi(MPI_Recv(p + off, n, MPI_BYTE, source, tag, comm, MPI_STATUS_IGNORE), "MPI_Recv", where);
  }
}

void agree(MPI_Comm comm, const std::string& error) {
  const int size = size_of(comm);
  const int mine = error.empty() ? size : rank_of(comm);
  int first = size;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", "sparseport::dist");
  if (first == size) return;
  std::string text = error;
  int len = static_cast<int>(std::min<size_t>(text.size(), INT_MAX));
  check_mpi(MPI_Bcast(&len, 1, MPI_INT, first, comm), "MPI_Bcast", "sparseport::dist");
  text.resize(static_cast<size_t>(len));
  check_mpi(MPI_Bcast(text.data(), len, MPI_CHAR, first, comm), "MPI_Bcast", "sparseport::dist");
  if (rank_of(comm) == first) throw InvalidArgument(text);
  throw InvalidArgument(text + " (reported by rank " + std::to_string(first) + ")");
}

void refuse_device_context(const Context& ctx, const std::string& w) {
  if (!ctx.device_memory()) return;
  throw Unsupported(w + ": the context (" + ctx.backend() +
                    ") works in device memory, which the distributed backward does not take yet (its path is "
                    "the forward's, but it was not run on a GPU); use a host context (reference, openmp)");
}

std::vector<int64_t> max_over_ranks(MPI_Comm comm, std::vector<int64_t> v, const std::string& w) {
  std::vector<int64_t> out(v.size());
  check_mpi(MPI_Allreduce(v.data(), out.data(), static_cast<int>(v.size()), MPI_INT64_T, MPI_MAX, comm), "MPI_Allreduce",
            w);
  return out;
}

void agree_on_checks(MPI_Comm comm, const std::function<void()>& checks) {
  // kind: 0 none, 1 InvalidArgument, 2 DimensionMismatch, 3 Unsupported.
  int kind = 0;
  std::string error;
  try {
    checks();
  } catch (const DimensionMismatch& e) {
    kind = 2;
    error = e.what();
  } catch (const InvalidArgument& e) {
    kind = 1;
    error = e.what();
  } catch (const Unsupported& e) {
    kind = 3;
    error = e.what();
  }
  const int size = size_of(comm), me = rank_of(comm);
  const int mine = kind == 0 ? size : me;
  int first = size;
  check_mpi(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm), "MPI_Allreduce", "sparseport::dist");
  if (first == size) return;
  int head[2] = {kind, static_cast<int>(std::min<size_t>(error.size(), INT_MAX))};
  check_mpi(MPI_Bcast(head, 2, MPI_INT, first, comm), "MPI_Bcast", "sparseport::dist");
  error.resize(static_cast<size_t>(head[1]));
  check_mpi(MPI_Bcast(error.data(), head[1], MPI_CHAR, first, comm), "MPI_Bcast", "sparseport::dist");
  if (me != first) error += " (reported by rank " + std::to_string(first) + ")";
  if (head[0] == 2) throw DimensionMismatch(error);
  if (head[0] == 3) throw Unsupported(error);
  throw InvalidArgument(error);
}

int to_int(int64_t n, const char* what, const std::string& where) {
  if (n < 0 || n > INT_MAX)
    throw Unsupported(where + ": " + what + " is " + std::to_string(n) + ", more than an MPI count (int) can hold");
  return static_cast<int>(n);
}

std::string where(const Context& ctx, const char* op) {
  return std::string("sparseport::dist::") + op + "[" + ctx.backend() + "]";
}

}  // namespace sparseport::dist::detail
