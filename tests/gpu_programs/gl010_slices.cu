// GL010 (access level): four launches, each on its own quarter of the buffer.
#include "common.h"
int main() {
    const int n = 1 << 20, chunk = n / 4;
    float* d;
    CHECK(cudaMalloc(&d, n * sizeof(float)));  // run: GL010
    for (int c = 0; c < 4; ++c) fill<<<blocks(chunk), 256>>>(d + c * chunk, chunk);
    CHECK(cudaFree(d));
    return 0;
}
