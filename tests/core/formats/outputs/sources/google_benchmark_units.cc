#include <benchmark/benchmark.h>
#include <map>
#include <string>
#include <vector>
#include <algorithm>

static void BM_build_dict(benchmark::State& state) {
  for (auto _ : state) {
    std::map<int, std::string> m;
    for (int i = 0; i < state.range(0); ++i) m[i] = std::to_string(i);
    benchmark::DoNotOptimize(m);
  }
}
static void BM_sort(benchmark::State& state) {
  std::vector<int> v(state.range(0));
  for (auto _ : state) {
    for (size_t i = 0; i < v.size(); ++i) v[i] = (int)((i * 2654435761u) % 1000);
    std::sort(v.begin(), v.end());
    benchmark::DoNotOptimize(v.data());
  }
}
#ifndef UNIT
#define UNIT benchmark::kMillisecond
#endif
BENCHMARK(BM_build_dict)->Arg(1000)->Unit(UNIT);
BENCHMARK(BM_sort)->Arg(64)->Arg(4096);
BENCHMARK_MAIN();
