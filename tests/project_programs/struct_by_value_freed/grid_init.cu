// The negative twin of struct_by_value: the same seven members returned by value, and main.cu
// frees each of them (a free in another file of the program counts, by member name).
#include <cuda_runtime.h>

#include "xs.h"

SimulationData move_to_device(SimulationData SD) {
  SimulationData GSD = SD;
  size_t sz = SD.n * sizeof(int);
  cudaMalloc((void **)&GSD.num_nucs, sz);
  cudaMemcpy(GSD.num_nucs, SD.num_nucs, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(double);
  cudaMalloc((void **)&GSD.concs, sz);
  cudaMemcpy(GSD.concs, SD.concs, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(int);
  cudaMalloc((void **)&GSD.mats, sz);
  cudaMemcpy(GSD.mats, SD.mats, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(double);
  cudaMalloc((void **)&GSD.unionized_energy_array, sz);
  cudaMemcpy(GSD.unionized_energy_array, SD.unionized_energy_array, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(int);
  cudaMalloc((void **)&GSD.index_grid, sz);
  cudaMemcpy(GSD.index_grid, SD.index_grid, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(double);
  cudaMalloc((void **)&GSD.nuclide_grid, sz);
  cudaMemcpy(GSD.nuclide_grid, SD.nuclide_grid, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(unsigned long);
  cudaMalloc((void **)&GSD.verification, sz);
  return GSD;
}
