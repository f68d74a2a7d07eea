// A stencil time loop: 8192x8192 five-point Jacobi, 3000 steps, ping-pong buffers.
#include <cstdio>
#include <cuda_runtime.h>
__global__ void jacobi(const float* in, float* out, int n) {
    int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
    if (x < 1 || y < 1 || x >= n - 1 || y >= n - 1) return;
    out[y * n + x] = 0.25f * (in[y * n + x - 1] + in[y * n + x + 1] + in[(y - 1) * n + x] + in[(y + 1) * n + x]);
}
int main() {
    const int n = 8192;
    size_t bytes = size_t(n) * n * sizeof(float);
    float *u, *v;
    cudaMalloc(&u, bytes);
    cudaMalloc(&v, bytes);
    cudaMemset(u, 0, bytes);
    cudaMemset(v, 0, bytes);
    dim3 block(32, 8), grid(n / 32, n / 8);
    for (int step = 0; step < 3000; ++step) {
        jacobi<<<grid, block>>>(u, v, n);
        float* t = u;
        u = v;
        v = t;
    }
    float x;
    cudaMemcpy(&x, u + n * n / 2 + n / 2, sizeof x, cudaMemcpyDeviceToHost);
    printf("u[mid] = %f\n", x);
    cudaFree(u);
    cudaFree(v);
    return 0;
}
