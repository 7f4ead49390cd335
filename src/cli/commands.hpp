// SPDX-License-Identifier: Apache-2.0
// The subcommands of the `sparseport` program. Each takes the arguments after its name and returns
// the exit code: 0 success, 1 a failed run or verification; usage mistakes throw UsageError (2).
#pragma once

#include <string>
#include <vector>

namespace sparseport::cli {

int cmd_info(const std::vector<std::string>& args);
int cmd_run(const std::vector<std::string>& args);
int cmd_devices(const std::vector<std::string>& args);
int cmd_cache(const std::vector<std::string>& args);
int cmd_tune(const std::vector<std::string>& args);

// The graph argument as printed in reports: the spec or path, or the default's name.
inline constexpr const char* kDefaultGraph = "powerlaw";

}  // namespace sparseport::cli
