#include <sparseport/graph.hpp>
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <bit>
#include <cstring>
#include <vector>
using namespace std;
constexpr int NB = 41;
struct S { int64_t maxd=0; int64_t dh[NB]={}, xh[NB]={}; uint64_t dsum=0; };
static inline int bucket(uint64_t x){ return std::min((int)std::bit_width(x), NB-1);}
template<class I> __attribute__((noinline)) void v0(const I* rp, const I* ci, int64_t rows, int64_t cols, S& s){
  for (int64_t i=0;i<rows;++i){ int64_t b=rp[i],e=rp[i+1],d=e-b; s.maxd=max(s.maxd,d); ++s.dh[bucket(d)];
    for(int64_t k=b;k<e;++k){ int64_t c=ci[k]; uint64_t x=c>i?c-i:i-c; ++s.xh[bucket(x)]; s.dsum += cols>0?(x<<20)/(uint64_t)cols:0; } } }
template<class I> __attribute__((noinline)) void v1(const I* rp, const I* ci, int64_t rows, int64_t cols, S& s){
  const double inv = 1.0/(double)cols; const uint64_t uc=cols;
  for (int64_t i=0;i<rows;++i){ int64_t b=rp[i],e=rp[i+1],d=e-b; s.maxd=max(s.maxd,d); ++s.dh[bucket(d)];
    for(int64_t k=b;k<e;++k){ int64_t c=ci[k]; uint64_t x=c>i?c-i:i-c; ++s.xh[bucket(x)]; uint64_t n=x<<20;
      uint64_t q=(uint64_t)((double)n*inv); q -= q*uc>n; q += (q+1)*uc<=n; s.dsum+=q; } } }
// no division, interleaved histograms
template<class I> __attribute__((noinline)) void v2(const I* rp, const I* ci, int64_t rows, int64_t cols, S& s){
  const double inv = 1.0/(double)cols; const uint64_t uc=cols; int64_t h[2][NB]={};
  for (int64_t i=0;i<rows;++i){ int64_t b=rp[i],e=rp[i+1],d=e-b; s.maxd=max(s.maxd,d); ++s.dh[bucket(d)];
    int64_t k=b; for(;k+1<e;k+=2){ for(int u=0;u<2;++u){int64_t c=ci[k+u]; uint64_t x=c>i?c-i:i-c; ++h[u][bucket(x)]; uint64_t n=x<<20;
      uint64_t q=(uint64_t)((double)n*inv); q -= q*uc>n; q += (q+1)*uc<=n; s.dsum+=q; }}
    for(;k<e;++k){ int64_t c=ci[k]; uint64_t x=c>i?c-i:i-c; ++h[0][bucket(x)]; uint64_t n=x<<20;
      uint64_t q=(uint64_t)((double)n*inv); q -= q*uc>n; q += (q+1)*uc<=n; s.dsum+=q; } }
  for(int j=0;j<NB;++j) s.xh[j]+=h[0][j]+h[1][j]; }
template<class I> __attribute__((noinline)) void v3(const I* rp, const I* ci, int64_t rows, int64_t cols, S& s){
  for (int64_t i=0;i<rows;++i){ int64_t b=rp[i],e=rp[i+1],d=e-b; s.maxd=max(s.maxd,d); ++s.dh[bucket(d)];
    for(int64_t k=b;k<e;++k){ int64_t c=ci[k]; uint64_t x=c>i?c-i:i-c; ++s.xh[bucket(x)]; } } }

template<class I> __attribute__((noinline)) void v4(const I* rp, const I* ci, int64_t rows, int64_t cols, S& s){
  int64_t h[4][NB]={}; uint64_t sum=0; const uint64_t uc=cols;
  for (int64_t i=0;i<rows;++i){ int64_t b=rp[i],e=rp[i+1],d=e-b; s.maxd=max(s.maxd,d); ++s.dh[bucket(d)];
    for(int64_t k=b;k<e;++k){ int64_t c=ci[k]; uint64_t x=c>i?c-i:i-c; ++h[k&3][bucket(x)]; sum += (x<<20)/uc; } }
  s.dsum+=sum; for(int j=0;j<NB;++j) s.xh[j]+=h[0][j]+h[1][j]+h[2][j]+h[3][j]; }
template<class I> __attribute__((noinline)) void v5(const I* rp, const I* ci, int64_t rows, int64_t cols, S& s){
  int64_t h[4][NB]={};
  for (int64_t i=0;i<rows;++i){ int64_t b=rp[i],e=rp[i+1],d=e-b; s.maxd=max(s.maxd,d); ++s.dh[bucket(d)];
    for(int64_t k=b;k<e;++k){ int64_t c=ci[k]; uint64_t x=c>i?c-i:i-c; ++h[k&3][bucket(x)]; } }
  for(int j=0;j<NB;++j) s.xh[j]+=h[0][j]+h[1][j]+h[2][j]+h[3][j]; }
int main(int argc,char**argv){
  for(int a=1;a<argc;++a){
    auto g = sparseport::load_graph<int32_t,float>(argv[a]);
    vector<char> junk(64<<20);
    auto run=[&](auto f,const char* name){ double best=1e9, med; vector<double> ts; S ref;
      for(int r=0;r<9;++r){ memset(junk.data(), r, junk.size()); S s; auto t0=chrono::steady_clock::now(); f(g.rowptr.data(),g.colind.data(),g.rows,g.cols,s);
        ts.push_back(chrono::duration<double,milli>(chrono::steady_clock::now()-t0).count()); ref=s;}
      sort(ts.begin(),ts.end()); printf("%-12s %s %7.3f ms (min %.3f) dsum %llu\n", argv[a]+16, name, ts[4], ts[0], (unsigned long long)ref.dsum); };
    run(v0<int32_t>,"div "); run(v1<int32_t>,"recip"); run(v2<int32_t>,"rec2 "); run(v3<int32_t>,"nosum"); run(v4<int32_t>,"h4div"); run(v5<int32_t>,"h4nos");
  } }
