// GL002: a's last use is followed by three launches before its free.
#include "common.h"
int main() {
    const int n = 1 << 20;
    float *a, *b;
    CHECK(cudaMalloc(&a, n * sizeof(float)));  // expect: GL002  run: GL002
    fill<<<blocks(n), 256>>>(a, n);
    CHECK(cudaMalloc(&b, 2 * n * sizeof(float)));
    fill<<<blocks(2 * n), 256>>>(b, 2 * n);
    scale<<<blocks(2 * n), 256>>>(b, 2 * n);
    scale<<<blocks(2 * n), 256>>>(b, 2 * n);
    CHECK(cudaFree(b));
    CHECK(cudaFree(a));
    return 0;
}
