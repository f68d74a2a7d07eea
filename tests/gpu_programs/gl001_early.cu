// GL001: b is allocated two launches before its first use.
#include "common.h"
int main() {
    const int n = 1 << 20;
    float *a, *b;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    CHECK(cudaMalloc(&b, n * sizeof(float)));  // expect: GL001  run: GL001
    fill<<<blocks(n), 256>>>(a, n);
    scale<<<blocks(n), 256>>>(a, n);
    add<<<blocks(n), 256>>>(a, b, n);
    CHECK(cudaFree(a));
    CHECK(cudaFree(b));
    CHECK(cudaDeviceSynchronize());
    return 0;
}
