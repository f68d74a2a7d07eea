// Four host threads, each with its own stream, allocating, launching and freeing.
#include <thread>
#include <vector>
#include "common.h"
int main() {
    std::vector<std::thread> threads;
    for (int k = 0; k < 4; ++k) {
        threads.emplace_back([] {
            cudaStream_t s;
            CHECK(cudaStreamCreate(&s));
            const int n = 1 << 16;
            for (int it = 0; it < 25; ++it) {
                float* d;
                CHECK(cudaMalloc(&d, n * sizeof(float)));  // expect: GL101
                fill<<<blocks(n), 256, 0, s>>>(d, n);
                scale<<<blocks(n), 256, 0, s>>>(d, n);
                CHECK(cudaStreamSynchronize(s));
                CHECK(cudaFree(d));
            }
            CHECK(cudaStreamDestroy(s));
        });
    }
    for (auto& t : threads) t.join();
    return 0;
}
