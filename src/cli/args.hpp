// SPDX-License-Identifier: Apache-2.0
// A small command-line parser for the subcommands: --name VALUE, --name=VALUE, boolean flags, one
// alias per option (-q for --quiet), named positionals, and help text generated from the same
// table so the two cannot drift apart.
#pragma once

#include <cstdint>
#include <exception>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace sparseport::cli {

// A mistake in how the program was called. main() prints it with a hint and exits with code 2.
class UsageError : public std::runtime_error {
 public:
  UsageError(const std::string& command, const std::string& message)
      : std::runtime_error(message), command_(command) {}
  // "sparseport run", so the hint can say "sparseport run --help".
  const std::string& command() const noexcept { return command_; }

 private:
  std::string command_;
};

class Args {
 public:
  // command: "sparseport run"; synopsis: the usage line after the command; about: a paragraph.
  Args(std::string command, std::string synopsis, std::string about);

  Args& flag(std::string name, std::string help, std::string alias = {});
  Args& option(std::string name, std::string metavar, std::string help);
  // Positionals are filled in the order declared; a required one that is missing is an error.
  Args& positional(std::string name, std::string help, bool required);
  // Free text printed after the option list (examples, definitions).
  Args& epilog(std::string text);

  // Returns false when -h/--help was given: the help has been printed on stdout.
  bool parse(const std::vector<std::string>& argv);

  bool has(std::string_view name) const;
  std::string get(std::string_view name, const std::string& fallback = {}) const;
  int64_t get_int(std::string_view name, int64_t fallback, int64_t lo, int64_t hi) const;
  uint64_t get_u64(std::string_view name, uint64_t fallback) const;
  // The positional of that name, or fallback when it was not given.
  std::string positional_value(std::string_view name, const std::string& fallback = {}) const;

  std::string help() const;
  const std::string& command() const { return command_; }
  [[noreturn]] void fail(const std::string& message) const;
  // The same for a library InvalidArgument about an argument (unknown op, backend, reduce).
  [[noreturn]] void fail_with(const std::exception& e) const;

 private:
  struct Spec {
    std::string name, alias, metavar, help;  // metavar empty: a boolean flag
  };
  struct Positional {
    std::string name, help;
    bool required;
  };
  const Spec* find(std::string_view name_or_alias) const;

  std::string command_, synopsis_, about_, epilog_;
  std::vector<Spec> specs_;
  std::vector<Positional> positional_specs_;
  std::map<std::string, std::string, std::less<>> values_;
  std::map<std::string, std::string, std::less<>> positionals_;
};

}  // namespace sparseport::cli
