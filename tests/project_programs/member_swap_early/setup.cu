// Allocates the members of the caller's struct (miniMDock's setup of `dockpars`) and frees them.
// `conformations_next` is only ever passed to a kernel as `conformations_current`, after the swap
// in generations.cu: the swap is followed, so both buffers are used (no GL004).
#include <cuda_runtime.h>

#include "dock.h"

void setup(GpuData *p, int n) {
  cudaMalloc(&p->conformations_current, n * sizeof(float));
  cudaMalloc(&p->conformations_next, n * sizeof(float));
  cudaMalloc(&p->energies, n * sizeof(float));
}

void teardown(GpuData *p) {
  cudaFree(p->conformations_current);
  cudaFree(p->conformations_next);
  cudaFree(p->energies);
}
