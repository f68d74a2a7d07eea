// The innermost stage: one launch, two files away from the caller in host.cu.
#include <cuda_runtime.h>

#include "stages.h"

__global__ void scale(float *b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] *= 2.0f;
}

void scale_rows(float *b, int n) {
  scale<<<(n + 255) / 256, 256>>>(b, n);
}
