// Session 36: CacheFile::holds_prefix (the scheduler's shape question) timed 200 times on a cache folder,
// with "thrash" after 64 MiB of other memory touched before each question (what a mini-batch loop's op
// leaves in the caches).  g++ -O2 -std=c++20 -I. -Iinclude -Ibuild/default/include hp2.cpp
//   -Lbuild/default/src/ops -lsparseport; ./a.out DIR [thrash]
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>
#include <algorithm>
#include "scheduler/cache.hpp"
using namespace sparseport::scheduler;
int main(int argc, char** argv) {
  std::string dir = argv[1];
  bool thrash = argc > 2;
  std::vector<char> big(64 << 20, 1);
  std::vector<double> ts;
  long sink = 0;
  for (int i = 0; i < 200; ++i) {
    if (thrash) for (size_t k = 0; k < big.size(); k += 64) sink += big[k]++;
    std::string shape = "0123456789abcdef/csr" + std::to_string(40000 + i) + "x" + std::to_string(40000 + i) + ":" + std::to_string(50000 + i) + ":";
    auto t0 = std::chrono::steady_clock::now();
    bool h = CacheFile(dir).holds_prefix(shape);
    ts.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    sink += h;
  }
  std::sort(ts.begin(), ts.end());
  std::printf("holds_prefix median %.2f us p10 %.2f p90 %.2f (%ld)\n", ts[100], ts[20], ts[180], sink % 2);
}
