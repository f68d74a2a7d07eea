// The kernels of a backprop-style program, included by main.cu (`#include "kernels.cu"`), as
// Rodinia's backprop includes backprop_cuda_kernel.cu.  Checked on its own as well: its own
// findings come from its own analysis, once.
#include <cuda_runtime.h>

// `partial` is never dereferenced: a buffer passed for it is not used by this launch.
__global__ void layer_forward(const float *in, float *out, const float *weights, float *partial, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i] * weights[i];
}

__global__ void adjust_weights(float *weights, const float *delta, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) weights[i] += delta[i];
}

// A host helper of the included file: its leak is reported here, not in main.cu.
void warm_up(int n) {
  float *d_scratch;
  cudaMalloc(&d_scratch, n * sizeof(float));  // expect: GL005
  adjust_weights<<<(n + 255) / 256, 256>>>(d_scratch, d_scratch, n);
}
