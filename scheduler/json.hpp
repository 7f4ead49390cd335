// SPDX-License-Identifier: Apache-2.0
// A minimal JSON reader (objects, arrays, strings without \\u escapes, numbers, literals) for the
// shipped cost models: the library takes no JSON dependency for one file format.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sparseport::scheduler {

struct Json {
  enum Kind { null, boolean, number, string, array, object } kind = null;
  double num = 0;
  std::string str;
  std::vector<Json> items;
  std::vector<double> nums;  // an array whose first item is a number holds its items here (all numbers)
  std::vector<std::pair<std::string, Json>> members;
  const Json* get(const std::string& k) const {
    for (const auto& [name, v] : members)
      if (name == k) return &v;
    return nullptr;
  }
};

// Parses a whole document; throws InvalidArgument "<origin>: <problem> at byte N".
Json parse_json(const std::string& text, const std::string& origin);

}  // namespace sparseport::scheduler
