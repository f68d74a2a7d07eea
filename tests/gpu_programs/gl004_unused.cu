// GL004: u is zeroed but no kernel ever uses it.
#include "common.h"
int main() {
    const int n = 1 << 20;
    float *u, *a;
    CHECK(cudaMalloc(&u, n * sizeof(float)));  // expect: GL004  run: GL004
    CHECK(cudaMemset(u, 0, n * sizeof(float)));
    CHECK(cudaMalloc(&a, 2 * n * sizeof(float)));
    fill<<<blocks(2 * n), 256>>>(a, 2 * n);
    CHECK(cudaFree(a));
    CHECK(cudaFree(u));
    return 0;
}
