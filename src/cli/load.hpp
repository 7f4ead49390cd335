// SPDX-License-Identifier: Apache-2.0
// Loading GRAPH arguments (a Matrix Market path or a generator spec) with progress on stderr.
#pragma once

#include <string>

#include "progress.hpp"
#include "sparseport/graph.hpp"

namespace sparseport::cli {

// The graph's name in reports: the argument as given, or the default generator's name.
inline std::string graph_label(const std::string& arg) { return arg.empty() ? "powerlaw" : arg; }

template <class I, class V>
HostCsr<I, V> load_with_progress(const std::string& arg, bool show_progress) {
  const std::string label = graph_label(arg);
  Progress p((is_generator_spec(label) ? "generating " : "loading ") + label, show_progress);
  MmReadOptions opt;
  opt.progress = [&p](double f) { p.fraction(f); };
  return load_graph<I, V>(arg, opt);
}

}  // namespace sparseport::cli
