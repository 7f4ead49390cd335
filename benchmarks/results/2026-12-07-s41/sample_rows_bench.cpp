// Session 41: the probe sample's row pick, before (widen rowptr to int64, a vector of rows per stratum,
// a sort: sample_rows) and after (two passes over the int32 rowptr as stored: stratified, copied from
// scheduler/timing.cpp at 2317d53), on a 2.4M-row power-law rowptr (149.6M entries).
// g++ -O2 -std=c++20 sample_rows_bench.cpp -o /tmp/srb && /tmp/srb
#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdint>
#include <random>
#include <vector>
#include <algorithm>
#include <utility>
#include <array>
struct Rows { std::vector<int64_t> rows; std::vector<std::pair<int64_t,int64_t>> cut; };
Rows sample_rows(const std::vector<int64_t>& rowptr, double frac, int64_t min_rows) {
  const int64_t rows = static_cast<int64_t>(rowptr.size()) - 1;
  Rows out;
  const double f = std::min(1.0, std::max(frac, static_cast<double>(min_rows) / rows));
  std::vector<std::vector<int64_t>> strata(65);
  for (int64_t i = 0; i < rows; ++i) {
    const uint64_t d = static_cast<uint64_t>(rowptr[i + 1] - rowptr[i]);
    strata[std::bit_width(d)].push_back(i);
  }
  for (size_t b = 0; b < strata.size(); ++b) {
    const std::vector<int64_t>& s = strata[b];
    if (s.empty()) continue;
    const double want = f * static_cast<double>(s.size());
    const bool cut = want < 0.5 && b >= 1 && f * std::ldexp(1.0, static_cast<int>(b) - 1) >= 1.0;
    if (cut) { for (const int64_t r : s) out.cut.emplace_back(r, std::max<int64_t>(1, std::llround(f * static_cast<double>(rowptr[r + 1] - rowptr[r])))); continue; }
    const int64_t n = std::clamp<int64_t>(std::llround(want), 1, static_cast<int64_t>(s.size()));
    for (int64_t j = 0; j < n; ++j) out.rows.push_back(s[(j * static_cast<int64_t>(s.size())) / n]);
  }
  std::sort(out.rows.begin(), out.rows.end());
  return out;
}
template <class I>
Rows stratified(const I* rowptr, int64_t rows, double frac, int64_t min_rows) {
  Rows out;
  if (rows <= 0) return out;
  if (rows <= min_rows) {
    out.rows.resize(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) out.rows[static_cast<size_t>(i)] = i;
    return out;
  }
  const double f = std::min(1.0, std::max(frac, static_cast<double>(min_rows) / static_cast<double>(rows)));
  constexpr int kStrata = 65;  // degree 0, 1, 2-3, 4-7, ...: std::bit_width of the degree
  const auto stratum = [&](int64_t i) {
    return std::bit_width(static_cast<uint64_t>(static_cast<int64_t>(rowptr[i + 1]) - static_cast<int64_t>(rowptr[i])));
  };
  std::array<int64_t, kStrata> size{};
  for (int64_t i = 0; i < rows; ++i) ++size[static_cast<size_t>(stratum(i))];
  // Per stratum: whether its rows are cut, how many it gives (n), the next pick's index j and position.
  std::array<bool, kStrata> cut{};
  std::array<int64_t, kStrata> n{}, j{}, next{}, seen{};
  size_t whole = 0;
  for (int b = 0; b < kStrata; ++b) {
    if (size[b] == 0) continue;
    const double want = f * static_cast<double>(size[b]);
    // The stratum's shortest degree, 2^(b-1), kept at f: at least one entry for every row.
    cut[b] = want < 0.5 && b >= 1 && f * std::ldexp(1.0, b - 1) >= 1.0;
    n[b] = cut[b] ? 0 : std::clamp<int64_t>(std::llround(want), 1, size[b]);
    whole += static_cast<size_t>(n[b]);
  }
  out.rows.reserve(whole);
  for (int64_t i = 0; i < rows; ++i) {
    const int b = stratum(i);
    if (cut[b]) {
      const auto d = static_cast<double>(static_cast<int64_t>(rowptr[i + 1]) - static_cast<int64_t>(rowptr[i]));
      out.cut.emplace_back(i, std::max<int64_t>(1, std::llround(f * d)));
    } else if (j[b] < n[b] && seen[b]++ == next[b]) {
      out.rows.push_back(i);
      next[b] = (++j[b] * size[b]) / n[b];
    }
  }
  if (out.rows.empty()) {  // only cut strata (cannot happen above min_rows rows; kept whole then)
    for (const auto& [r, k] : out.cut) out.rows.push_back(r);
    out.cut.clear();
  }
  return out;
}


int main(){
  const int64_t R=2449029; std::mt19937_64 g(1); std::vector<int32_t> rp32(R+1); rp32[0]=0;
  for(int64_t i=0;i<R;++i){ double u=std::uniform_real_distribution<>(0,1)(g); int d=std::min<int>(20000,(int)(10*std::pow(u,-0.9))); rp32[i+1]=rp32[i]+d; }
  auto t0=std::chrono::steady_clock::now();
  std::vector<int64_t> rp(R+1); for(int64_t i=0;i<=R;++i) rp[i]=rp32[i];
  auto t1=std::chrono::steady_clock::now();
  Rows r=sample_rows(rp,0.03,1000);
  auto t2=std::chrono::steady_clock::now();
  auto t3=std::chrono::steady_clock::now(); Rows r2=stratified(rp32.data(),R,0.03,1000); auto t4=std::chrono::steady_clock::now();
  printf("new from int32 %.2f ms same %d\n",std::chrono::duration<double,std::milli>(t4-t3).count(), (int)(r2.rows==r.rows));
  printf("nnz %d widen %.2f ms sample %.2f ms rows %zu cut %zu\n",rp32[R],std::chrono::duration<double,std::milli>(t1-t0).count(),std::chrono::duration<double,std::milli>(t2-t1).count(),r.rows.size(),r.cut.size());
}
