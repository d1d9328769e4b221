#include <benchmark/benchmark.h>
static void BM_add(benchmark::State& state) {
  long s = 0;
  for (auto _ : state) { s += state.range(0); benchmark::DoNotOptimize(s); }
}
BENCHMARK(BM_add)->DenseRange(1, 201);
BENCHMARK_MAIN();
