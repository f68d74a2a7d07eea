// Host functions that launch kernels, called from host.cu (Rodinia dwt2d's fdwt/rdwt style).
#include <cuda_runtime.h>

#include "stages.h"

__global__ void forward(float *a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) a[i] = 0.5f * a[i];
}

__global__ void rows(float *a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n) a[i] += a[i - 1];
}

// Two launches; `scratch` is never used.
void run_stage(float *a, float *scratch, int n) {
  forward<<<(n + 255) / 256, 256>>>(a, n);
  rows<<<(n + 255) / 256, 256>>>(a, n);
}

// One more level: scale_rows is defined in scale.cu.
void run_other(float *b, int n) {
  scale_rows(b, n);
  scale_rows(b, n);
}
