// SPDX-License-Identifier: Apache-2.0
#include "scheduler/json.hpp"

#include <cctype>
#include <charconv>
#include <cstdlib>
#include <cstring>

#include "sparseport/errors.hpp"

namespace sparseport::scheduler {
namespace {

class Reader {
 public:
  Reader(const std::string& text, const std::string& origin) : t_(text), origin_(origin) {}
  Json document() {
    Json j = value(0);
    ws();
    if (i_ != t_.size()) fail("text after the end of the document");
    return j;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw InvalidArgument(origin_ + ": " + what + " at byte " + std::to_string(i_));
  }
  void ws() {
    while (i_ < t_.size() && std::isspace(static_cast<unsigned char>(t_[i_]))) ++i_;
  }
  void expect(char c) {
    ws();
    if (i_ >= t_.size() || t_[i_] != c) fail(std::string("expected '") + c + "'");
    ++i_;
  }
  std::string text() {
    expect('"');
    std::string s;
    while (i_ < t_.size() && t_[i_] != '"') {
      if (t_[i_] == '\\') {
        if (++i_ >= t_.size()) break;
        const char e = t_[i_];
        s += e == 'n' ? '\n' : e == 't' ? '\t' : e;  // names and notes only: \uXXXX is not needed
      } else {
        s += t_[i_];
      }
      ++i_;
    }
    if (i_ >= t_.size()) fail("unterminated string");
    ++i_;
    return s;
  }
  Json value(int depth) {
    if (depth > 64) fail("nested too deeply");
    ws();
    if (i_ >= t_.size()) fail("unexpected end");
    Json j;
    const char c = t_[i_];
    if (c == '{') {
      j.kind = Json::object;
      ++i_;
      ws();
      if (i_ < t_.size() && t_[i_] == '}') return ++i_, j;
      while (true) {
        std::string k = text();
        expect(':');
        j.names.push_back(std::move(k));
        j.values.push_back(value(depth + 1));
        ws();
        if (i_ < t_.size() && t_[i_] == ',') {
          ++i_;
          continue;
        }
        expect('}');
        return j;
      }
    }
    if (c == '[') {
      j.kind = Json::array;
      ++i_;
      ws();
      if (i_ < t_.size() && t_[i_] == ']') return ++i_, j;
      if (i_ < t_.size() && (t_[i_] == '-' || std::isdigit(static_cast<unsigned char>(t_[i_])))) {
        while (true) {
          ws();
          double v = 0;
          const auto [end, ec] = std::from_chars(t_.data() + i_, t_.data() + t_.size(), v);
          if (ec != std::errc()) fail("an array that starts with a number holds something else");
          j.nums.push_back(v);
          i_ = static_cast<size_t>(end - t_.data());
          ws();
          if (i_ < t_.size() && t_[i_] == ',') {
            ++i_;
            continue;
          }
          expect(']');
          return j;
        }
      }
      while (true) {
        j.items.push_back(value(depth + 1));
        ws();
        if (i_ < t_.size() && t_[i_] == ',') {
          ++i_;
          continue;
        }
        expect(']');
        return j;
      }
    }
    if (c == '"') {
      j.kind = Json::string;
      j.str = text();
      return j;
    }
    for (const char* lit : {"true", "false", "null"})
      if (t_.compare(i_, std::strlen(lit), lit) == 0) {
        i_ += std::strlen(lit);
        j.kind = lit[0] == 'n' ? Json::null : Json::boolean;
        j.num = lit[0] == 't';
        return j;
      }
    const char* begin = t_.c_str() + i_;
    char* end = nullptr;
    j.num = std::strtod(begin, &end);
    if (end == begin) fail("not a JSON value");
    i_ += static_cast<size_t>(end - begin);
    j.kind = Json::number;
    return j;
  }

  const std::string& t_;
  const std::string& origin_;
  size_t i_ = 0;
};

}  // namespace

Json parse_json(const std::string& text, const std::string& origin) { return Reader(text, origin).document(); }

}  // namespace sparseport::scheduler
