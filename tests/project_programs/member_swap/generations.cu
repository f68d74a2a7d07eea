// Each generation evolves the current conformations, then swaps the two buffers through a local
// (`tmp = p->a; p->a = p->b; p->b = tmp;`), as miniMDock's docking loop does.
#include <cuda_runtime.h>

#include "dock.h"

__global__ void evolve(float *conformations, const float *energies, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) conformations[i] = 0.5f * conformations[i] + energies[i];
}

void run_generations(GpuData *p, int n, int generations) {
  for (int g = 0; g < generations; ++g) {
    evolve<<<(n + 255) / 256, 256>>>(p->conformations_current, p->energies, n);
    float *tmp = p->conformations_current;
    p->conformations_current = p->conformations_next;
    p->conformations_next = tmp;
  }
}
