// Calls of host functions defined in other files count their launches and their uses of the
// pointers passed (from their summaries): run_stage launches two kernels before `d_b` is first
// used (GL001), run_other launches two (through scale_rows, in a third file) between the last use
// of `d_a` and its free (GL002), and run_stage never uses `d_scratch` (GL004).  Before, each call
// was one use with no launches, and none of these was found.
#include <cuda_runtime.h>
#include <cstdlib>

#include "stages.h"

#define A_N 8192
#define B_N 2048

int main() {
  float *h = (float *)calloc(A_N, sizeof(float));
  float *d_a, *d_b, *d_scratch;
  cudaMalloc(&d_a, A_N * sizeof(float));  // expect: GL002
  cudaMalloc(&d_scratch, A_N * sizeof(float));  // expect: GL004
  cudaMalloc(&d_b, B_N * sizeof(float));  // expect: GL001
  cudaMemcpy(d_a, h, A_N * sizeof(float), cudaMemcpyHostToDevice);
  run_stage(d_a, d_scratch, A_N);
  cudaFree(d_scratch);
  run_other(d_b, B_N);
  cudaMemcpy(h, d_b, B_N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(d_b);
  cudaFree(d_a);
  free(h);
  return 0;
}
