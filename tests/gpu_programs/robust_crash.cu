// Crashes after allocating and launching: the trace must be readable up to the crash.
#include "common.h"
int main() {
    const int n = 1 << 16;
    float* d;
    CHECK(cudaMalloc(&d, n * sizeof(float)));
    fill<<<blocks(n), 256>>>(d, n);
    CHECK(cudaDeviceSynchronize());
    abort();
}
