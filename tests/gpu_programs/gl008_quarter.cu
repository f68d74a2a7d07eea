// GL008 (access level): the only kernel touches the first quarter of a 4 MiB buffer.
#include "common.h"
int main() {
    const int n = 1 << 20;
    float* d;
    CHECK(cudaMalloc(&d, n * sizeof(float)));  // run: GL008
    fill<<<blocks(n / 4), 256>>>(d, n / 4);
    CHECK(cudaFree(d));
    return 0;
}
