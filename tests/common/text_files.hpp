// SPDX-License-Identifier: Apache-2.0
// A file's whole text, and how often a string occurs in a text: what the cache tests read back.
#pragma once

#include <fstream>
#include <sstream>
#include <string>

namespace sparseport::test {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace sparseport::test
