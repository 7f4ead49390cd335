// SPDX-License-Identifier: Apache-2.0
// Generator specs ("er:N:P@SEED"): the table of kinds with their fields, is_generator_spec, and the
// Spec that parses and range-checks each field, with the messages that name the spec, the field
// and the expected usage. Separate from the families so that the whole grammar of specs, and
// every refusal of a malformed one, is in one place.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sparseport/errors.hpp"
#include "sparseport/graph.hpp"
#include "core/generators_internal.hpp"

namespace sparseport {
namespace detail::gen {

struct Kind {
  std::string_view name;
  std::string_view usage;
  std::array<std::string_view, 5> fields;
  size_t field_count;
};

namespace {

constexpr std::array<Kind, 14> kKinds = {{
    {"er", "er:N:P", {"N", "P"}, 2},
    {"rmat", "rmat:SCALE:EDGEFACTOR", {"SCALE", "EDGEFACTOR"}, 2},
    {"rmatp", "rmatp:SCALE:EDGEFACTOR:A:B:C", {"SCALE", "EDGEFACTOR", "A", "B", "C"}, 5},
    {"hubs", "hubs:N:DEG:NHUBS:HUBDEG", {"N", "DEG", "NHUBS", "HUBDEG"}, 4},
    {"band", "band:N:DEG", {"N", "DEG"}, 2},
    {"megarow", "megarow:N:DEG:FRACTION", {"N", "DEG", "FRACTION"}, 3},
    {"chunglu", "chunglu:N:AVGDEG:EXPONENT", {"N", "AVGDEG", "EXPONENT"}, 3},
    {"sbm", "sbm:N:BLOCKS:DEGIN:DEGOUT", {"N", "BLOCKS", "DEGIN", "DEGOUT"}, 4},
    {"mesh2d", "mesh2d:NX:NY:RENUMBER", {"NX", "NY", "RENUMBER"}, 3},
    {"mesh3d", "mesh3d:NX:NY:NZ:RENUMBER", {"NX", "NY", "NZ", "RENUMBER"}, 4},
    {"mesh3d27", "mesh3d27:NX:NY:NZ:RENUMBER", {"NX", "NY", "NZ", "RENUMBER"}, 4},
    {"road", "road:NX:NY:KEEP", {"NX", "NY", "KEEP"}, 3},
    {"bipartite", "bipartite:ROWS:COLS:DEG", {"ROWS", "COLS", "DEG"}, 3},
    {"powerlaw", "powerlaw", {}, 0},
}};

std::string_view name_part(std::string_view spec) { return spec.substr(0, spec.find(':')); }

// The spec without its seed suffix ("er:10:0.5@7" -> "er:10:0.5").
std::string_view body_part(std::string_view spec) { return spec.substr(0, spec.find('@')); }

const Kind* find_kind(std::string_view name) {
  for (const Kind& k : kKinds)
    if (k.name == name) return &k;
  return nullptr;
}

std::string known_usages() {
  std::string s;
  for (const Kind& k : kKinds) s += (s.empty() ? "" : ", ") + std::string(k.usage);
  return s;
}

}  // namespace

Spec::Spec(std::string_view text) : text_(text) {
  const size_t at = text.find('@');
  const std::string_view body = text.substr(0, at);
  kind_ = find_kind(name_part(body));
  if (kind_ == nullptr)
    throw InvalidArgument("sparseport::generate: '" + std::string(text) + "' is not a generator spec (known: " +
                          known_usages() + "; any of them may end in @SEED).");
  size_t pos = kind_->name.size();
  while (pos < body.size()) {  // body[pos] == ':'
    const size_t next = std::min(body.find(':', pos + 1), body.size());
    fields_.push_back(body.substr(pos + 1, next - pos - 1));
    pos = next;
  }
  for (size_t i = 0; i < std::min(fields_.size(), kind_->field_count); ++i)
    if (fields_[i].empty()) refuse("field " + field_name(i) + " is empty");
  if (fields_.size() < kind_->field_count)
    refuse("field " + std::string(kind_->fields[fields_.size()]) + " is missing");
  if (fields_.size() > kind_->field_count)
    refuse("there " + std::string(fields_.size() == 1 ? "is 1 field" : "are " + std::to_string(fields_.size()) + " fields") +
           " after '" + std::string(kind_->name) + "' but it takes " + std::to_string(kind_->field_count));
  if (at != std::string_view::npos) seed_ = parse_seed(text.substr(at + 1));
}

std::string_view Spec::name() const { return kind_->name; }

void Spec::refuse(const std::string& problem) const {
  throw InvalidArgument("sparseport::generate: in spec '" + std::string(text_) + "', " + problem + " (expected " +
                        std::string(kind_->usage) + ").");
}

std::string Spec::field_name(size_t i) const { return std::string(kind_->fields[i]); }

int64_t Spec::whole(size_t i) const {
  const std::string_view f = checked_field(i);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec == std::errc() && end == f.data() + f.size()) {
    if (v < 0) refuse("field " + field_name(i) + " is " + std::string(f) + ", which is negative");
    if (v > kMaxField) refuse("field " + field_name(i) + " is " + std::string(f) + ", above the limit 2^62");
    return v;
  }
  const double d = number(i);
  if (d < 0) refuse("field " + field_name(i) + " is " + std::string(f) + ", which is negative");
  if (d != std::floor(d)) refuse("field " + field_name(i) + " is " + std::string(f) + ", which is not a whole number");
  if (d > static_cast<double>(kMaxField))
    refuse("field " + field_name(i) + " is " + std::string(f) + ", above the limit 2^62");
  return static_cast<int64_t>(d);
}

bool Spec::flag(size_t i, const std::string& meaning) const {
  const int64_t v = whole(i);
  if (v > 1) refuse("field " + field_name(i) + " is " + std::string(fields_[i]) + ", but it must be 0 or 1 (" + meaning + ")");
  return v == 1;
}

double Spec::number_in(size_t i, double lo, double hi, const std::string& range) const {
  const double d = number(i);
  if (!(d >= lo && d <= hi)) refuse("field " + field_name(i) + " is " + std::string(fields_[i]) + ", outside " + range);
  return d;
}

std::string_view Spec::checked_field(size_t i) const {
  if (fields_[i].empty()) refuse("field " + field_name(i) + " is empty");
  return fields_[i];
}

double Spec::number(size_t i) const {
  const std::string_view f = checked_field(i);
  double d = 0.0;
  auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), d);
  if (ec != std::errc() || end != f.data() + f.size() || !std::isfinite(d))
    refuse("field " + field_name(i) + " is '" + std::string(f) + "', which is not a number");
  return d;
}

uint64_t Spec::parse_seed(std::string_view f) const {
  const auto bad = [&](const std::string& problem) {
    throw InvalidArgument("sparseport::generate: in spec '" + std::string(text_) + "', " + problem + " (expected " +
                          std::string(kind_->usage) + "@SEED).");
  };
  if (f.empty()) bad("the seed after '@' is empty");
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(f.data(), f.data() + f.size(), v);
  if (ec != std::errc() || end != f.data() + f.size())
    bad("the seed after '@' is '" + std::string(f) + "', which is not a whole number from 0 to " +
        std::to_string(std::numeric_limits<uint64_t>::max()));
  return v;
}

std::string fmt_count(long double x) {
  if (x < 1e18L) return std::to_string(static_cast<int64_t>(x));
  char buf[64];  // a whole number, not "13835058055282163712.000000"
  std::snprintf(buf, sizeof buf, x < 1e30L ? "%.0Lf" : "%.3Le", x);
  return buf;
}

}  // namespace detail::gen

bool is_generator_spec(std::string_view spec) {
  using namespace detail::gen;
  return find_kind(name_part(body_part(spec))) != nullptr;
}

}  // namespace sparseport
