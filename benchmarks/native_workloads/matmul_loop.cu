// A large matrix multiply in a loop: 2048x2048 SGEMM (shared-memory tiles), 300 iterations.
#include <cstdio>
#include <cuda_runtime.h>
#define T 16
__global__ void sgemm(const float* a, const float* b, float* c, int n) {
    __shared__ float as[T][T], bs[T][T];
    int row = blockIdx.y * T + threadIdx.y, col = blockIdx.x * T + threadIdx.x;
    float acc = 0.f;
    for (int k = 0; k < n; k += T) {
        as[threadIdx.y][threadIdx.x] = a[row * n + k + threadIdx.x];
        bs[threadIdx.y][threadIdx.x] = b[(k + threadIdx.y) * n + col];
        __syncthreads();
        for (int j = 0; j < T; ++j) acc += as[threadIdx.y][j] * bs[j][threadIdx.x];
        __syncthreads();
    }
    c[row * n + col] = acc;
}
__global__ void init(float* p, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v;
}
int main() {
    const int n = 2048;
    size_t bytes = size_t(n) * n * sizeof(float);
    float *a, *b, *c;
    cudaMalloc(&a, bytes);
    cudaMalloc(&b, bytes);
    cudaMalloc(&c, bytes);
    init<<<n * n / 256, 256>>>(a, n * n, 1.f);
    init<<<n * n / 256, 256>>>(b, n * n, 0.5f);
    dim3 block(T, T), grid(n / T, n / T);
    for (int it = 0; it < 300; ++it) sgemm<<<grid, block>>>(a, b, c, n);
    float x;
    cudaMemcpy(&x, c, sizeof x, cudaMemcpyDeviceToHost);
    printf("c[0] = %f\n", x);
    cudaFree(a);
    cudaFree(b);
    cudaFree(c);
    return 0;
}
