// GL003: b (same size) could reuse a, which is dead but still allocated; a is freed late (GL002).
#include "common.h"
int main() {
    const int n = 1 << 20;
    float *a, *b;
    CHECK(cudaMalloc(&a, n * sizeof(float)));  // expect: GL002  run: GL002
    fill<<<blocks(n), 256>>>(a, n);
    CHECK(cudaMalloc(&b, n * sizeof(float)));  // expect: GL003  run: GL003
    fill<<<blocks(n), 256>>>(b, n);
    CHECK(cudaFree(b));
    CHECK(cudaFree(a));
    return 0;
}
