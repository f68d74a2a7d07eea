// GL103: the same weights uploaded on every iteration (static finding; the run confirms it).
#include "common.h"
// Defined here, not in common.h: static analysis sees only this file, and must see that the
// kernel only reads the weights.
__global__ void apply(const float* w, float* x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] += w[i];
}
int main() {
    const int n = 1 << 20;
    float* h = static_cast<float*>(calloc(n, sizeof(float)));
    float *w, *x;
    CHECK(cudaMalloc(&x, n * sizeof(float)));
    fill<<<blocks(n), 256>>>(x, n);
    CHECK(cudaMalloc(&w, n * sizeof(float)));
    for (int it = 0; it < 4; ++it) {
        CHECK(cudaMemcpy(w, h, n * sizeof(float), cudaMemcpyHostToDevice));  // expect: GL103  run: GL103
        apply<<<blocks(n), 256>>>(w, x, n);
    }
    CHECK(cudaFree(w));
    CHECK(cudaFree(x));
    free(h);
    return 0;
}
