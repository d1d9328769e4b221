#include <benchmark/benchmark.h>
static void BM_add(benchmark::State& state) {
  long s = 0;
  for (auto _ : state) { s += 1; benchmark::DoNotOptimize(s); }
}
BENCHMARK(BM_add);
BENCHMARK(BM_add);
BENCHMARK_MAIN();
