// A multi-stream copy/compute pipeline: 4 streams, 2048 chunks of 4 MiB: upload, scale, download.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void work(float* p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * 1.5f + 1.f;
}
int main() {
    const int streams = 4, chunks = 2048, n = 1 << 20;
    size_t bytes = size_t(n) * sizeof(float);
    float* host;
    cudaMallocHost(&host, bytes * 64);
    float* dev[streams];
    cudaStream_t s[streams];
    for (int k = 0; k < streams; ++k) {
        cudaStreamCreate(&s[k]);
        cudaMalloc(&dev[k], bytes);
    }
    for (int c = 0; c < chunks; ++c) {
        int k = c % streams;
        size_t at = size_t(c % 64) * n;  // 64 chunks of pinned host memory, reused
        cudaMemcpyAsync(dev[k], host + at, bytes, cudaMemcpyHostToDevice, s[k]);
        work<<<n / 256, 256, 0, s[k]>>>(dev[k], n);
        cudaMemcpyAsync(host + at, dev[k], bytes, cudaMemcpyDeviceToHost, s[k]);
    }
    cudaDeviceSynchronize();
    printf("host[1] = %f\n", host[1]);
    for (int k = 0; k < streams; ++k) {
        cudaFree(dev[k]);
        cudaStreamDestroy(s[k]);
    }
    cudaFreeHost(host);
    return 0;
}
