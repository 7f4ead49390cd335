// SPDX-License-Identifier: Apache-2.0
#include "src/core/fault.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "sparseport/errors.hpp"

namespace sparseport::detail {
namespace {

constexpr std::string_view kKnown[] = {"host_alloc", "device_alloc", "cache_write", "cache_read", "cache_lock"};

// -1: SPARSEPORT_FAULT_INJECT not read yet; 0: nothing armed; 1: g_sites holds the armed sites.
std::atomic<int> g_mode{-1};
std::mutex g_mu;
std::string g_sites;  // ",site,site," so that a site matches as ",name,"

bool known(std::string_view s) {
  for (std::string_view k : kKnown)
    if (s == k) return true;
  return false;
}

// Splits "a, b,,c" into the known sites (",a,b,c,") and the unknown ones ("x, y").
std::string normalise(std::string_view list, std::string* unknown) {
  std::string out = ",";
  while (!list.empty()) {
    const size_t comma = list.find(',');
    std::string_view s = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view{} : list.substr(comma + 1);
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    if (s.empty()) continue;
    if (!known(s)) {
      if (unknown != nullptr) *unknown += (unknown->empty() ? "" : ", ") + std::string(s);
      continue;
    }
    std::string key(1, ',');
    key.append(s);
    key.push_back(',');
    if (out.find(key) == std::string::npos) out.append(key, 1, std::string::npos);
  }
  return out == "," ? std::string() : out;
}

std::string listed(const std::string& sites) {  // ",a,b," -> "a,b"
  return sites.size() < 2 ? std::string() : sites.substr(1, sites.size() - 2);
}

void read_env_locked() {
  const char* env = std::getenv("SPARSEPORT_FAULT_INJECT");
  std::string unknown;
  g_sites = normalise(env != nullptr ? env : "", &unknown);
  if (!unknown.empty())
    std::fprintf(stderr,
                 "sparseport: warning: SPARSEPORT_FAULT_INJECT names unknown fault sites (%s); they are ignored "
                 "(known: %s)\n",
                 unknown.c_str(), known_fault_sites());
  if (!g_sites.empty())
    std::fprintf(stderr, "sparseport: warning: SPARSEPORT_FAULT_INJECT arms the fault sites %s: they fail on purpose\n",
                 listed(g_sites).c_str());
  g_mode.store(g_sites.empty() ? 0 : 1, std::memory_order_relaxed);
}

}  // namespace

const char* known_fault_sites() { return "host_alloc, device_alloc, cache_write, cache_read, cache_lock"; }

bool fault_armed(std::string_view site) noexcept {
  if (g_mode.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_mode.load(std::memory_order_relaxed) < 0) read_env_locked();
  if (g_sites.empty()) return false;
  std::string pattern;
  pattern.reserve(site.size() + 2);
  pattern += ',';
  pattern += site;
  pattern += ',';
  return g_sites.find(pattern) != std::string::npos;
}

std::string set_fault_sites(std::string_view sites) {
  std::string unknown;
  std::string next = normalise(sites, &unknown);
  if (!unknown.empty())
    throw InvalidArgument("sparseport: set_fault_sites: unknown fault site(s) " + unknown + " (known: " +
                          known_fault_sites() + ")");
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_mode.load(std::memory_order_relaxed) < 0) read_env_locked();
  std::string before = listed(g_sites);
  g_sites = std::move(next);
  g_mode.store(g_sites.empty() ? 0 : 1, std::memory_order_relaxed);
  return before;
}

void reset_fault_sites_from_env() {
  std::lock_guard<std::mutex> lock(g_mu);
  g_sites.clear();
  g_mode.store(-1, std::memory_order_relaxed);
}

}  // namespace sparseport::detail
