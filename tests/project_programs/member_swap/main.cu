// The negative twin of member_swap_early: the generations start right after setup, so neither
// conformation buffer waits (with T = 1, one launch of `init_population` in between would already
// be an early allocation of `conformations_next`), and teardown frees all three right after the
// last generation.
#include <cuda_runtime.h>

#include "dock.h"

int main() {
  const int n = 1 << 14;
  GpuData d;
  setup(&d, n);
  run_generations(&d, n, 100);
  teardown(&d);
  return 0;
}
