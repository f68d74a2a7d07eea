// 100,000 live objects at once, then a 16 GiB one.
#include <vector>
#include "common.h"
int main() {
    std::vector<float*> ptrs(100000);
    for (auto& p : ptrs) CHECK(cudaMalloc(&p, 256));  // expect: GL004, GL005, GL101
    fill<<<1, 64>>>(ptrs[0], 64);
    for (auto p : ptrs) CHECK(cudaFree(p));
    float* big;
    CHECK(cudaMalloc(&big, size_t(16) << 30));
    fill<<<blocks(1 << 20), 256>>>(big, 1 << 20);
    CHECK(cudaFree(big));
    return 0;
}
