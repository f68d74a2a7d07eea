// The negative twin of struct_by_value: receives the struct by value and frees every member
// once the verification is read back.
#include <cuda_runtime.h>
#include <cstdlib>

#include "xs.h"

__global__ void lookup(const int *num_nucs, const double *concs, const int *mats, const double *energy,
                       const int *index_grid, const double *nuclide_grid, unsigned long *verification, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double x = concs[i] * energy[i] + nuclide_grid[i];
  verification[i] = (unsigned long)(x + num_nucs[i] + mats[i] + index_grid[i]);
}

int main() {
  SimulationData SD;
  SD.n = 1 << 16;
  SD.num_nucs = (int *)calloc(SD.n, sizeof(int));
  SD.concs = (double *)calloc(SD.n, sizeof(double));
  SD.mats = (int *)calloc(SD.n, sizeof(int));
  SD.unionized_energy_array = (double *)calloc(SD.n, sizeof(double));
  SD.index_grid = (int *)calloc(SD.n, sizeof(int));
  SD.nuclide_grid = (double *)calloc(SD.n, sizeof(double));
  SimulationData GSD = move_to_device(SD);
  lookup<<<SD.n / 256, 256>>>(GSD.num_nucs, GSD.concs, GSD.mats, GSD.unionized_energy_array, GSD.index_grid,
                              GSD.nuclide_grid, GSD.verification, SD.n);
  unsigned long *v = (unsigned long *)malloc(SD.n * sizeof(unsigned long));
  cudaMemcpy(v, GSD.verification, SD.n * sizeof(unsigned long), cudaMemcpyDeviceToHost);
  cudaFree(GSD.num_nucs);
  cudaFree(GSD.concs);
  cudaFree(GSD.mats);
  cudaFree(GSD.unionized_energy_array);
  cudaFree(GSD.index_grid);
  cudaFree(GSD.nuclide_grid);
  cudaFree(GSD.verification);
  free(v);
  return 0;
}
