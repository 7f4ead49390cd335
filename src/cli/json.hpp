// SPDX-License-Identifier: Apache-2.0
// Writes one flat JSON object per line (JSON Lines), which is all the program prints with --json.
// Numbers use the shortest form that reads back to the same double; NaN and infinities, which JSON
// cannot hold, become null.
#pragma once

#include <charconv>
#include <cmath>
#include <concepts>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sparseport::cli {

inline std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (c < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  return out + "\"";
}

inline std::string json_number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

inline std::string json_array(const std::vector<std::string>& raw_items) {
  std::string out = "[";
  for (size_t i = 0; i < raw_items.size(); ++i) out += (i ? "," : "") + raw_items[i];
  return out + "]";
}

class JsonObject {
 public:
  JsonObject& raw(std::string_view key, std::string_view json) {
    // Appended piecewise: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string&&.
    if (!text_.empty()) text_ += ',';
    text_ += json_string(key);
    text_ += ':';
    text_ += json;
    return *this;
  }
  JsonObject& add(std::string_view key, std::string_view v) { return raw(key, json_string(v)); }
  JsonObject& add(std::string_view key, const char* v) { return raw(key, json_string(v)); }
  JsonObject& add(std::string_view key, const std::string& v) { return raw(key, json_string(v)); }
  JsonObject& add(std::string_view key, bool v) { return raw(key, v ? "true" : "false"); }
  template <std::integral T>
    requires(!std::same_as<T, bool>)
  JsonObject& add(std::string_view key, T v) {
    return raw(key, std::to_string(v));
  }
  JsonObject& add(std::string_view key, double v) { return raw(key, json_number(v)); }
  JsonObject& add(std::string_view key, std::optional<double> v) { return raw(key, v ? json_number(*v) : "null"); }
  JsonObject& add(std::string_view key, std::optional<int64_t> v) {
    return raw(key, v ? std::to_string(*v) : std::string("null"));
  }
  JsonObject& null(std::string_view key) { return raw(key, "null"); }

  std::string str() const { return "{" + text_ + "}"; }

 private:
  std::string text_;
};

}  // namespace sparseport::cli
