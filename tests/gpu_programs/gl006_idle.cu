// GL006: x is idle for two launches between its uses.
#include "common.h"
int main() {
    const int n = 1 << 20;
    float *x, *y;
    CHECK(cudaMalloc(&x, n * sizeof(float)));  // expect: GL006  run: GL006
    fill<<<blocks(n), 256>>>(x, n);
    CHECK(cudaMalloc(&y, 2 * n * sizeof(float)));
    fill<<<blocks(2 * n), 256>>>(y, 2 * n);
    scale<<<blocks(2 * n), 256>>>(y, 2 * n);
    CHECK(cudaFree(y));
    scale<<<blocks(n), 256>>>(x, n);
    CHECK(cudaFree(x));
    return 0;
}
