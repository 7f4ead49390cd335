// SPDX-License-Identifier: Apache-2.0
#include "args.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <utility>

namespace sparseport::cli {

Args::Args(std::string command, std::string synopsis, std::string about)
    : command_(std::move(command)), synopsis_(std::move(synopsis)), about_(std::move(about)) {}

Args& Args::flag(std::string name, std::string help, std::string alias) {
  specs_.push_back({std::move(name), std::move(alias), {}, std::move(help)});
  return *this;
}

Args& Args::option(std::string name, std::string metavar, std::string help) {
  specs_.push_back({std::move(name), {}, std::move(metavar), std::move(help)});
  return *this;
}

Args& Args::positional(std::string name, std::string help, bool required) {
  positional_specs_.push_back({std::move(name), std::move(help), required});
  return *this;
}

Args& Args::epilog(std::string text) {
  epilog_ = std::move(text);
  return *this;
}

const Args::Spec* Args::find(std::string_view name_or_alias) const {
  for (const Spec& s : specs_)
    if (s.name == name_or_alias || (!s.alias.empty() && s.alias == name_or_alias)) return &s;
  return nullptr;
}

void Args::fail(const std::string& message) const { throw UsageError(command_, command_ + ": " + message); }

void Args::fail_with(const std::exception& e) const {
  std::string_view what = e.what();
  // "sparseport: unknown op ..." reads better as "sparseport run: unknown op ...".
  if (what.starts_with("sparseport: ")) what.remove_prefix(12);
  fail(std::string(what));
}

bool Args::parse(const std::vector<std::string>& argv) {
  size_t next_positional = 0;
  bool options_done = false;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& arg = argv[i];
    if (!options_done && (arg == "-h" || arg == "--help")) {
      std::fputs(help().c_str(), stdout);
      return false;
    }
    if (!options_done && arg == "--") {
      options_done = true;
      continue;
    }
    // A lone "-" is a positional (by convention stdin), and so is anything after "--".
    if (options_done || arg.size() < 2 || arg[0] != '-') {
      if (next_positional >= positional_specs_.size())
        fail("unexpected argument '" + arg + "'" +
             (positional_specs_.empty() ? std::string(" (this command takes no positional arguments)") : ""));
      positionals_[positional_specs_[next_positional++].name] = arg;
      continue;
    }
    const size_t eq = arg.find('=');
    const std::string key = arg.substr(0, eq);
    const Spec* spec = find(key);
    if (spec == nullptr) fail("unknown option '" + key + "'");
    if (values_.contains(spec->name)) fail("option '" + spec->name + "' is given more than once");
    if (spec->metavar.empty()) {
      if (eq != std::string::npos) fail("option '" + spec->name + "' is a flag and takes no value");
      values_[spec->name] = std::string(1, '1');
    } else if (eq != std::string::npos) {
      values_[spec->name] = arg.substr(eq + 1);
    } else {
      if (i + 1 >= argv.size()) fail("option '" + spec->name + "' needs a value (" + spec->metavar + ")");
      values_[spec->name] = argv[++i];
    }
  }
  for (size_t p = next_positional; p < positional_specs_.size(); ++p)
    if (positional_specs_[p].required) fail("missing argument " + positional_specs_[p].name);
  return true;
}

bool Args::has(std::string_view name) const { return values_.contains(name); }

std::string Args::get(std::string_view name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

int64_t Args::get_int(std::string_view name, int64_t fallback, int64_t lo, int64_t hi) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  int64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty())
    fail("option '" + std::string(name) + "' wants an integer, not '" + s + "'");
  if (v < lo || v > hi)
    fail("option '" + std::string(name) + "' is " + s + " but must be in [" + std::to_string(lo) + ", " +
         std::to_string(hi) + "]");
  return v;
}

uint64_t Args::get_u64(std::string_view name, uint64_t fallback) const {
  const auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  const std::string& s = it->second;
  uint64_t v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty())
    fail("option '" + std::string(name) + "' wants a non-negative integer below 2^64, not '" + s + "'");
  return v;
}

std::string Args::positional_value(std::string_view name, const std::string& fallback) const {
  const auto it = positionals_.find(name);
  return it == positionals_.end() ? fallback : it->second;
}

std::string Args::help() const {
  std::string h = "usage: " + command_ + " " + synopsis_ + "\n\n" + about_ + "\n";
  if (!positional_specs_.empty()) {
    h += "\narguments:\n";
    for (const Positional& p : positional_specs_) {
      std::string left = "  " + p.name;
      left.resize(std::max<size_t>(left.size() + 2, 24), ' ');
      h += left + p.help + "\n";
    }
  }
  h += "\noptions:\n";
  std::vector<Spec> all = specs_;
  all.push_back({"--help", "-h", {}, "print this help and exit"});
  for (const Spec& s : all) {
    std::string left = "  " + (s.alias.empty() ? s.name : s.alias + ", " + s.name);
    if (!s.metavar.empty()) left += " " + s.metavar;
    left.resize(std::max<size_t>(left.size() + 2, 24), ' ');
    h += left + s.help + "\n";
  }
  if (!epilog_.empty()) h += "\n" + epilog_ + "\n";
  return h;
}

}  // namespace sparseport::cli
