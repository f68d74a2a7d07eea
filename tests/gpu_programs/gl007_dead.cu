// GL007: the memset is overwritten by the upload before anything reads it.
#include "common.h"
int main() {
    const int n = 1 << 20;
    float* h = static_cast<float*>(calloc(n, sizeof(float)));
    float* d;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    CHECK(cudaMemset(d, 0, n * sizeof(float)));  // expect: GL007  run: GL007
    CHECK(cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice));
    scale<<<blocks(n), 256>>>(d, n);
    CHECK(cudaFree(d));
    free(h);
    return 0;
}
