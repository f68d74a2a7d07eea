// `gpulint run --sample N` / `--kernels REGEX`: 100 launches of `scale`, five of `fill`, one of `add`,
// one module.  Whatever is instrumented, the program's result must not change.
#include "common.h"
int main() {
    const int n = 1 << 16;
    float* a;
    CHECK(cudaMalloc(&a, n * sizeof(float)));
    fill<<<blocks(n), 256>>>(a, n);
    for (int step = 0; step < 100; ++step) {
        scale<<<blocks(n), 256>>>(a, n);
        if (step % 25 == 24) fill<<<blocks(n), 256>>>(a, n);  // back to 1 every 25 steps
    }
    add<<<blocks(n), 256>>>(a, a, n);  // 1 + 1
    float h[2];
    CHECK(cudaMemcpy(&h[0], a, sizeof(float), cudaMemcpyDeviceToHost));
    CHECK(cudaMemcpy(&h[1], a + n - 1, sizeof(float), cudaMemcpyDeviceToHost));
    printf("%.1f %.1f\n", h[0], h[1]);
    CHECK(cudaFree(a));
    return 0;
}
