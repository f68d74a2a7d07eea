// Kernels come from an included .cu file: `layer_forward` never dereferences its `partial`
// parameter, so `d_partial` is allocated for nothing (GL004).  Before the program was analysed
// as a whole, a kernel not defined in this file used every pointer passed to it.
#include <cuda_runtime.h>
#include <cstdlib>

#include "kernels.cu"

#define N 4096
#define DELTA_N 1024

int main() {
  float *h = (float *)malloc(N * sizeof(float));
  for (int i = 0; i < N; ++i) h[i] = 1.0f;
  float *d_in, *d_out, *d_w, *d_partial, *d_delta;
  cudaMalloc(&d_in, N * sizeof(float));
  cudaMalloc(&d_out, N * sizeof(float));
  cudaMalloc(&d_w, N * sizeof(float));
  cudaMalloc(&d_partial, N * sizeof(float));  // expect: GL004
  cudaMemcpy(d_in, h, N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(d_w, h, N * sizeof(float), cudaMemcpyHostToDevice);
  layer_forward<<<N / 256, 256>>>(d_in, d_out, d_w, d_partial, N);
  cudaFree(d_in);
  cudaFree(d_partial);
  cudaMalloc(&d_delta, DELTA_N * sizeof(float));
  cudaMemcpy(d_delta, h, DELTA_N * sizeof(float), cudaMemcpyHostToDevice);
  adjust_weights<<<DELTA_N / 256, 256>>>(d_w, d_delta, DELTA_N);
  cudaMemcpy(h, d_out, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaMemcpy(h, d_w, N * sizeof(float), cudaMemcpyDeviceToHost);
  cudaFree(d_delta);
  cudaFree(d_out);
  cudaFree(d_w);
  free(h);
  return 0;
}
