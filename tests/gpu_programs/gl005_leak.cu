// GL005: l is never freed.
#include "common.h"
int main() {
    const int n = 1 << 20;
    float* l;
    CHECK(cudaMalloc(&l, n * sizeof(float)));  // expect: GL005  run: GL005
    fill<<<blocks(n), 256>>>(l, n);
    CHECK(cudaDeviceSynchronize());
    return 0;
}
