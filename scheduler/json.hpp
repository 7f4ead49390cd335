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
  // An object's members as two lists, names[i] -> values[i] (a vector of pairs holding the
  // still-incomplete Json does not compile with every standard library).
  std::vector<std::string> names;
  std::vector<Json> values;
  const Json* get(const std::string& k) const {
    for (size_t i = 0; i < names.size(); ++i)
      if (names[i] == k) return &values[i];
    return nullptr;
  }
};

// Parses a whole document; throws InvalidArgument "<origin>: <problem> at byte N".
Json parse_json(const std::string& text, const std::string& origin);

}  // namespace sparseport::scheduler
