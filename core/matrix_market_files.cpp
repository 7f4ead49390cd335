// SPDX-License-Identifier: Apache-2.0
// Matrix Market's file I/O: Input hands out a plain or gzip file as runs of whole lines, Output
// writes a buffered file, gzip-compressed for a ".gz" name. Separate from the parsing and the
// writing because it is the only code that touches file descriptors and zlib, and its errors (the
// file, errno, zlib's text) are about the file, not about its contents.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>

#include "sparseport/errors.hpp"
#include "core/matrix_market_internal.hpp"

namespace sparseport::detail::mm {
namespace {

std::string errno_text(int e) { return std::error_code(e, std::generic_category()).message(); }

// gzerror's text without the "<fd:4>: " that gzdopen'ed streams put in front: the message names the
// file already.
std::string zlib_text(const char* msg) {
  std::string_view m = msg != nullptr ? msg : "unknown error";
  if (m.starts_with("<fd:"))
    if (const size_t colon = m.find(">: "); colon != std::string_view::npos) m.remove_prefix(colon + 3);
  return std::string(m);
}

}  // namespace

// ---- input ------------------------------------------------------------------------------------

Input::Input(std::string path, size_t chunk, const std::function<void(double)>* progress)
    : path_(std::move(path)), cap_(chunk), progress_(progress) {
  fd_ = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd_ < 0) throw ParseError(path_, 0, "cannot open the file for reading (" + errno_text(errno) + ").");
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int e = errno;
    ::close(fd_);
    throw ParseError(path_, 0, "cannot inspect the file (" + errno_text(e) + ").");
  }
  if (S_ISDIR(st.st_mode)) {
    ::close(fd_);
    throw ParseError(path_, 0, "is a directory, not a Matrix Market file.");
  }
  file_bytes_ = S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : 0;
  unsigned char magic[2] = {0, 0};
  if (::pread(fd_, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b) {
    gz_ = ::gzdopen(fd_, "rb");
    if (gz_ == nullptr) {
      ::close(fd_);
      throw ParseError(path_, 0, "cannot start reading the gzip data (out of memory).");
    }
    fd_ = -1;  // zlib owns it now
    ::gzbuffer(gz_, file_bytes_ > 0 ? static_cast<unsigned>(std::clamp<int64_t>(file_bytes_, 8192, kGzBufferBytes))
                                    : kGzBufferBytes);
  }
  // A small file gets a small buffer: the chunk size pays off only for files larger than it (an
  // 8 MiB buffer for a 1 KiB file costs more than reading it).
  if (file_bytes_ > 0)
    cap_ = std::min(cap_, std::max(kMinChunkBytes, static_cast<size_t>(file_bytes_) * (gz_ != nullptr ? 8 : 1) + 1));
  try {
    buf_.reset(new char[cap_ + 1]);
  } catch (...) {
    if (gz_ != nullptr) ::gzclose(gz_);
    if (fd_ >= 0) ::close(fd_);
    throw;
  }
}
Input::~Input() {
  if (gz_ != nullptr) ::gzclose(gz_);
  if (fd_ >= 0) ::close(fd_);
}

std::string_view Input::peek() {
  if (data_ == 0 && !eof_) read_more();
  return {buf_.get(), data_};
}

bool Input::refill(size_t done, int64_t line) {
  if (done > 0) {
    // After an added final '\n' nothing remains; otherwise keep the partial line.
    const size_t rest = done >= data_ ? 0 : data_ - done;
    if (rest > 0) std::memmove(buf_.get(), buf_.get() + done, rest);
    data_ = rest;
  }
  const char* nl = static_cast<const char*>(::memrchr(buf_.get(), '\n', data_));
  lines_ = nl == nullptr ? 0 : static_cast<size_t>(nl - buf_.get()) + 1;
  for (;;) {
    if (lines_ > 0) return true;
    if (eof_) {
      if (!error_.empty()) throw ParseError(path_, line, error_);
      if (data_ == 0) return false;
      buf_[data_] = '\n';  // the slot past cap_ is kept free for this
      lines_ = ++data_;
      return true;
    }
    if (data_ == cap_) grow(line);
    read_more();
  }
}

void Input::grow(int64_t line) {
  if (cap_ >= kMaxLineBytes)
    throw ParseError(path_, line,
                     "the line is longer than " + std::to_string(kMaxLineBytes >> 20) +
                         " MiB; this is not a Matrix Market text file.");
  const size_t cap = std::min(cap_ * 2, kMaxLineBytes);
  std::unique_ptr<char[]> buf(new char[cap + 1]);
  std::memcpy(buf.get(), buf_.get(), data_);
  buf_ = std::move(buf);
  cap_ = cap;
}

void Input::read_more() {
  char* dst = buf_.get() + data_;
  const size_t want = cap_ - data_;
  size_t got = 0;
  if (gz_ != nullptr) {
    const int n = ::gzread(gz_, dst, static_cast<unsigned>(want));
    if (n < 0) {
      int code = Z_OK;
      const char* msg = ::gzerror(gz_, &code);
      error_ = code == Z_ERRNO ? "cannot read the file (" + errno_text(errno) + ")."
                               : "the gzip data is corrupt (zlib: " + zlib_text(msg) + ").";
      eof_ = true;
    } else if (n == 0) {
      int code = Z_OK;
      const char* msg = ::gzerror(gz_, &code);
      // Z_BUF_ERROR at the end: the input stopped in the middle of a gzip stream.
      if (code != Z_OK)
        error_ = "the gzip data ends early or is corrupt (zlib: " + zlib_text(msg) + "); the file is truncated?";
      eof_ = true;
    }
    got = n > 0 ? static_cast<size_t>(n) : 0;
    const z_off_t off = ::gzoffset(gz_);
    if (off > 0) read_bytes_ = off;
  } else {
    while (got < want) {
      const ssize_t n = ::read(fd_, dst + got, want - got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        error_ = "cannot read the file (" + errno_text(errno) + ").";
        eof_ = true;
        break;
      }
      if (n == 0) {
        eof_ = true;
        break;
      }
      got += static_cast<size_t>(n);
    }
    read_bytes_ += static_cast<int64_t>(got);
  }
  // Whole lines end at the last '\n' of the buffer.
  const char* nl = static_cast<const char*>(::memrchr(buf_.get() + data_, '\n', got));
  data_ += got;
  if (nl != nullptr) lines_ = static_cast<size_t>(nl - buf_.get()) + 1;
  if (progress_ != nullptr && file_bytes_ > 0)
    (*progress_)(std::min(1.0, static_cast<double>(read_bytes_) / static_cast<double>(file_bytes_)));
}

// ---- output -----------------------------------------------------------------------------------

Output::Output(std::string path, std::string op) : path_(std::move(path)), op_(std::move(op)) {
  const bool gz = path_.size() >= 3 && path_.compare(path_.size() - 3, 3, ".gz") == 0;
  if (gz) {
    // Level 1: at level 6 a 20M-entry real file took 58 s to write on the 2-core dev VM, and zlib
    // compressed 100 MB of such lines in 7.2 s against 0.96 s at level 1, for a file only 7%
    // smaller (18% on mdual's pattern).
    gz_ = ::gzopen(path_.c_str(), "wb1");
    if (gz_ == nullptr) fail_open(errno);
    ::gzbuffer(gz_, kGzBufferBytes);
  } else {
    file_ = std::fopen(path_.c_str(), "wb");
    if (file_ == nullptr) fail_open(errno);
  }
  buf_.resize(kFlushBytes + kRoom);
}
Output::~Output() {
  if (gz_ == nullptr && file_ == nullptr) return;
  if (gz_ != nullptr) ::gzclose(gz_);
  if (file_ != nullptr) std::fclose(file_);
  std::remove(path_.c_str());
}

void Output::close() {
  flush();
  int rc = 0;
  if (gz_ != nullptr) {
    rc = ::gzclose(gz_) == Z_OK ? 0 : -1;
    gz_ = nullptr;
  } else {
    rc = std::fclose(file_);
    file_ = nullptr;
  }
  if (rc != 0) {
    std::remove(path_.c_str());
    throw Error(op_ + ": cannot finish writing " + path_ + " (" + errno_text(errno) + ").");
  }
}

void Output::fail_open(int e) const {
  throw Error(op_ + ": cannot open " + path_ + " for writing (" + errno_text(e) + ").");
}
void Output::flush() {
  if (used_ == 0) return;
  const bool ok = gz_ != nullptr ? ::gzwrite(gz_, buf_.data(), static_cast<unsigned>(used_)) == static_cast<int>(used_)
                                 : std::fwrite(buf_.data(), 1, used_, file_) == used_;
  if (!ok) throw Error(op_ + ": cannot write " + path_ + " (" + errno_text(errno) + ").");
  used_ = 0;
}

}  // namespace sparseport::detail::mm
