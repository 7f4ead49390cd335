// Session 36: one fstat of an open file and a 6 KB memmem, each after 64 MiB of other memory touched.
//   g++ -O2 fs.cpp; ./a.out decisions.jsonl
#include <chrono>
#include <cstdio>
#include <vector>
#include <algorithm>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>
#include <cstring>
#include <string>
int main(int argc, char** argv) {
  int fd = open(argv[1], O_RDONLY);
  std::vector<char> big(64 << 20, 1);
  std::string text(6240, 'x');
  std::vector<double> a, b, c;
  long sink = 0;
  for (int i = 0; i < 200; ++i) {
    for (size_t k = 0; k < big.size(); k += 64) sink += big[k]++;
    auto t0 = std::chrono::steady_clock::now();
    struct stat st; fstat(fd, &st);
    auto t1 = std::chrono::steady_clock::now();
    sink += memmem(text.data(), text.size(), "\"key\":\"0123456789abcdef/csr4", 28) != nullptr;
    auto t2 = std::chrono::steady_clock::now();
    a.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    b.push_back(std::chrono::duration<double, std::micro>(t2 - t1).count());
  }
  std::sort(a.begin(), a.end()); std::sort(b.begin(), b.end());
  std::printf("fstat %.2f us, memmem 6 KB %.2f us (%ld)\n", a[100], b[100], sink % 2);
}
