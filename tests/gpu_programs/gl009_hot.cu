// GL009 (full level): every thread reads the first 16 entries of the table; the rest once.
#include "common.h"
__global__ void lookup(const float* lut, float* out, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = lut[i] + lut[i % 16] * lut[(i + 1) % 16];
}
int main() {
    const int n = 1 << 16;
    float *lut, *out;
    CHECK(cudaMalloc(&lut, n * sizeof(float)));  // run: GL009
    CHECK(cudaMalloc(&out, n * sizeof(float)));
    CHECK(cudaMemset(lut, 0, n * sizeof(float)));
    lookup<<<blocks(n), 256>>>(lut, out, n);
    CHECK(cudaFree(out));
    CHECK(cudaFree(lut));
    return 0;
}
