// GL101: the same buffer allocated and freed on every iteration (static finding; the run confirms it).
#include "common.h"
int main() {
    const int n = 1 << 20;
    float* t;
    for (int it = 0; it < 5; ++it) {
        CHECK(cudaMalloc(&t, n * sizeof(float)));  // expect: GL101  run: GL101
        fill<<<blocks(n), 256>>>(t, n);
        CHECK(cudaFree(t));
    }
    return 0;
}
