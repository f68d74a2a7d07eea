// miniMDock-style: setup() (setup.cu) allocates both conformation buffers, but the initial
// population only needs `conformations_current`; three scoring launches run before the
// generations (generations.cu) first touch `conformations_next`, through the swap.  DrGPUM's early
// allocation (GL001), found here, at the call that allocates it.
#include <cuda_runtime.h>

#include "dock.h"

__global__ void init_population(float *conformations, float *energies, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    conformations[i] = 1.0f;
    energies[i] = 0.0f;
  }
}

__global__ void score(const float *conformations, float *energies, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) energies[i] += conformations[i] * conformations[i];
}

int main() {
  const int n = 1 << 14;
  GpuData d;
  setup(&d, n);  // expect: GL001
  init_population<<<n / 256, 256>>>(d.conformations_current, d.energies, n);
  for (int pass = 0; pass < 3; ++pass) {
    score<<<n / 256, 256>>>(d.conformations_current, d.energies, n);
  }
  score<<<n / 256, 256>>>(d.conformations_current, d.energies, n);
  score<<<n / 256, 256>>>(d.conformations_current, d.energies, n);
  run_generations(&d, n, 100);
  teardown(&d);
  return 0;
}
