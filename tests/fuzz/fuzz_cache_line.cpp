// SPDX-License-Identifier: Apache-2.0
// Fuzzes the decision cache's line parser (scheduler::parse_record, which CacheFile::read applies
// to every line of decisions.jsonl). The input is one line. parse_record documents no exceptions:
// it returns a Record, or nullopt with a reason in *error. A Record must survive
// format_record -> parse_record unchanged, and format_record must give one line that formats
// back to itself.
#include <exception>
#include <optional>
#include <string>

#include "fuzz_common.hpp"
#include "scheduler/cache.hpp"

namespace sch = sparseport::scheduler;

namespace {

std::optional<sch::Record> parse(const std::string& line, std::string* error) {
  try {
    return sch::parse_record(line, error);
  } catch (const std::exception& e) {
    fuzz::finding("parse_record threw " + fuzz::type_name(e) + ": " + e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string line(reinterpret_cast<const char*>(data), size);
  std::string error;
  const std::optional<sch::Record> r = parse(line, &error);
  if (!r) {
    fuzz::require(!error.empty(), "parse_record refused a line without saying why");
    return 0;
  }
  const std::string text = sch::format_record(*r);
  fuzz::require(text.find('\n') == std::string::npos, "format_record wrote a line break: " + text);
  std::string error2;
  const std::optional<sch::Record> back = parse(text, &error2);
  fuzz::require(back.has_value(), "parse_record refuses what format_record wrote (" + error2 + "): " + text);
  fuzz::require(*back == *r, "format_record -> parse_record changed the record: " + text);
  fuzz::require(sch::format_record(*back) == text, "format_record is not stable: " + text);
  return 0;
}
