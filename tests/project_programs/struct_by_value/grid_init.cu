// Allocates seven members of a local struct and returns the struct by value: the members do not
// escape (the caller gets their pointers in its copy, followed by member name), and no file of
// the program frees them, so each allocation leaks (GL005, 7 of 7).
#include <cuda_runtime.h>

#include "xs.h"

SimulationData move_to_device(SimulationData SD) {
  SimulationData GSD = SD;
  size_t sz = SD.n * sizeof(int);
  cudaMalloc((void **)&GSD.num_nucs, sz);  // expect: GL005
  cudaMemcpy(GSD.num_nucs, SD.num_nucs, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(double);
  cudaMalloc((void **)&GSD.concs, sz);  // expect: GL005
  cudaMemcpy(GSD.concs, SD.concs, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(int);
  cudaMalloc((void **)&GSD.mats, sz);  // expect: GL005
  cudaMemcpy(GSD.mats, SD.mats, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(double);
  cudaMalloc((void **)&GSD.unionized_energy_array, sz);  // expect: GL005
  cudaMemcpy(GSD.unionized_energy_array, SD.unionized_energy_array, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(int);
  cudaMalloc((void **)&GSD.index_grid, sz);  // expect: GL005
  cudaMemcpy(GSD.index_grid, SD.index_grid, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(double);
  cudaMalloc((void **)&GSD.nuclide_grid, sz);  // expect: GL005
  cudaMemcpy(GSD.nuclide_grid, SD.nuclide_grid, sz, cudaMemcpyHostToDevice);
  sz = SD.n * sizeof(unsigned long);
  cudaMalloc((void **)&GSD.verification, sz);  // expect: GL005
  return GSD;
}
