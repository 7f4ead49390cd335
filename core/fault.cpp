// SPDX-License-Identifier: Apache-2.0
#include "core/fault.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "sparseport/errors.hpp"

namespace sparseport::detail {
namespace {

constexpr std::string_view kKnown[] = {"host_alloc", "device_alloc", "cache_write", "cache_read", "cache_lock"};

// -1: SPARSEPORT_FAULT_INJECT not read yet; 0: nothing armed; 1: g_armed holds the armed sites.
std::atomic<int> g_mode{-1};
std::mutex g_mu;

// An armed site: `pass` < 0 fails every check; otherwise the checks it still lets pass before its
// one failure.
struct Armed {
  std::string site;
  long pass = -1;
};
std::vector<Armed> g_armed;

bool known(std::string_view s) {
  for (std::string_view k : kKnown)
    if (s == k) return true;
  return false;
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Parses "a, b@3,,c" into the armed sites (a site named twice: the later one) and the entries it
// refuses ("x, y@z"): an unknown name, or a count that is not a non-negative number.
std::vector<Armed> parse(std::string_view list, std::string* refused) {
  std::vector<Armed> out;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view entry = trimmed(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    if (entry.empty()) continue;
    const size_t at = entry.find('@');
    Armed a{std::string(trimmed(entry.substr(0, at))), -1};
    bool ok = known(a.site);
    if (ok && at != std::string_view::npos) {
      const std::string_view count = trimmed(entry.substr(at + 1));
      ok = !count.empty() && count.size() <= 9 && count.find_first_not_of("0123456789") == std::string_view::npos;
      if (ok) a.pass = std::stol(std::string(count));
    }
    if (!ok) {
      if (refused != nullptr) *refused += (refused->empty() ? "" : ", ") + std::string(entry);
      continue;
    }
    std::erase_if(out, [&](const Armed& b) { return b.site == a.site; });
    out.push_back(std::move(a));
  }
  return out;
}

std::string listed(const std::vector<Armed>& armed) {  // "a,b@3"
  std::string out;
  for (const Armed& a : armed) {
    if (!out.empty()) out += ',';
    out += a.site;
    if (a.pass >= 0) out += '@' + std::to_string(a.pass);
  }
  return out;
}

void arm_locked(std::vector<Armed> armed) {
  g_armed = std::move(armed);
  g_mode.store(g_armed.empty() ? 0 : 1, std::memory_order_relaxed);
}

void read_env_locked() {
  const char* env = std::getenv("SPARSEPORT_FAULT_INJECT");
  std::string refused;
  arm_locked(parse(env != nullptr ? env : "", &refused));
  if (!refused.empty())
    std::fprintf(stderr,
                 "sparseport: warning: SPARSEPORT_FAULT_INJECT names unknown fault sites or bad counts (%s); they "
                 "are ignored (known: %s; a count: site@N)\n",
                 refused.c_str(), known_fault_sites());
  if (!g_armed.empty())
    std::fprintf(stderr, "sparseport: warning: SPARSEPORT_FAULT_INJECT arms the fault sites %s: they fail on purpose\n",
                 listed(g_armed).c_str());
}

}  // namespace

const char* known_fault_sites() { return "host_alloc, device_alloc, cache_write, cache_read, cache_lock"; }

bool fault_armed(std::string_view site) noexcept {
  if (g_mode.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_mode.load(std::memory_order_relaxed) < 0) read_env_locked();
  for (auto it = g_armed.begin(); it != g_armed.end(); ++it) {
    if (it->site != site) continue;
    if (it->pass < 0) return true;
    if (it->pass > 0) {
      --it->pass;
      return false;
    }
    g_armed.erase(it);  // a counted site fails once
    g_mode.store(g_armed.empty() ? 0 : 1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

std::string set_fault_sites(std::string_view sites) {
  std::string refused;
  std::vector<Armed> next = parse(sites, &refused);
  if (!refused.empty())
    throw InvalidArgument("sparseport: set_fault_sites: unknown fault site(s) or bad count(s) " + refused +
                          " (known: " + known_fault_sites() + "; a count: site@N, N >= 0)");
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_mode.load(std::memory_order_relaxed) < 0) read_env_locked();
  std::string before = listed(g_armed);
  arm_locked(std::move(next));
  return before;
}

void reset_fault_sites_from_env() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_armed.clear();
  g_mode.store(-1, std::memory_order_relaxed);
}

}  // namespace sparseport::detail
