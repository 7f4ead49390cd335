// SPDX-License-Identifier: Apache-2.0
#include "core/plan_cache.hpp"

namespace sparseport::detail {

std::shared_ptr<Plan> PlanCache::find(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = lru_.begin(); it != lru_.end(); ++it) {
    if (it->first != key) continue;
    lru_.splice(lru_.begin(), lru_, it);
    ++stats_.hits;
    return lru_.front().second;
  }
  ++stats_.misses;
  return nullptr;
}

std::shared_ptr<Plan> PlanCache::find_if(const std::function<bool(const Plan&)>& match) const {
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [key, plan] : lru_)
    if (match(*plan)) return plan;
  return nullptr;
}

void PlanCache::insert(const std::string& key, std::shared_ptr<Plan> plan) {
  std::shared_ptr<Plan> dropped;  // destroyed outside the lock
  std::lock_guard<std::mutex> lock(mu_);
  if (armed_) {
    armed_ = false;
    if (on_first_insert_) on_first_insert_();
  }
  for (auto it = lru_.begin(); it != lru_.end(); ++it)
    if (it->first == key) {
      lru_.erase(it);
      break;
    }
  lru_.emplace_front(key, std::move(plan));
  if (lru_.size() > capacity_) {
    dropped = std::move(lru_.back().second);
    lru_.pop_back();
    ++stats_.evicted;
  }
}

void PlanCache::invalidate(const void* p, size_t bytes) {
  if (p == nullptr || bytes == 0) return;
  const uintptr_t b = reinterpret_cast<uintptr_t>(p), e = b + bytes;
  std::vector<std::shared_ptr<Plan>> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = lru_.begin(); it != lru_.end();) {
    if (it->second->overlaps(b, e)) {
      dropped.push_back(std::move(it->second));
      it = lru_.erase(it);
      ++stats_.invalidated;
    } else {
      ++it;
    }
  }
}

void PlanCache::clear() {
  std::list<std::pair<std::string, std::shared_ptr<Plan>>> dropped;
  std::lock_guard<std::mutex> lock(mu_);
  dropped.swap(lru_);
  armed_ = true;
}

PlanStats PlanCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  PlanStats s = stats_;
  s.entries = lru_.size();
  return s;
}

}  // namespace sparseport::detail
