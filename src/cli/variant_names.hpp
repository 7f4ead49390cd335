// SPDX-License-Identifier: Apache-2.0
// What `--variant V` names among the variants a backend offers for an op: the full name
// ("spmm.merge_path") or its short name after the op ("merge_path") when exactly one offered
// variant has it. Header-only so that tests/cli can check the ambiguous case, which no built-in
// plugin's names produce today.
#pragma once

#include <string>
#include <vector>

namespace sparseport::cli {

// The offered names that `requested` names: {full} for a full name, every offered name ending in
// "." + requested otherwise. Exactly one entry means resolved; none is unknown, several ambiguous.
inline std::vector<std::string> variants_named(const std::vector<std::string>& offered, const std::string& requested) {
  for (const std::string& v : offered)
    if (v == requested) return {v};
  std::vector<std::string> matches;
  if (requested.empty()) return matches;
  const std::string tail = "." + requested;
  for (const std::string& v : offered)
    if (v.size() > tail.size() && v.compare(v.size() - tail.size(), tail.size(), tail) == 0) matches.push_back(v);
  return matches;
}

// The message for a `requested` name that does not resolve to one of `offered` (op and backend
// as the user sees them), as a whole sentence listing the choices.
inline std::string variant_choice_error(const std::vector<std::string>& offered, const std::string& requested,
                                        const std::string& op, const std::string& backend) {
  const std::vector<std::string> matches = variants_named(offered, requested);
  std::string list;
  for (const std::string& v : offered) list += (list.empty() ? "" : ", ") + v;
  std::string msg = "--variant '" + requested + "' ";
  if (matches.size() > 1) {
    std::string which;
    for (const std::string& v : matches) which += (which.empty() ? "" : ", ") + v;
    msg += "is ambiguous for " + op + " on " + backend + " (it could be " + which + ")";
  } else {
    msg += "is not a variant of " + op + " on " + backend;
  }
  if (offered.empty()) return msg + ", which offers none";
  return msg + "; choose one of: " + list + " (or all)";
}

}  // namespace sparseport::cli
