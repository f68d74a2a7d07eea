// A CUDA pipeline with the memory waste gpulint fixes (GL001, GL002, GL004, GL005, GL007, GL101,
// GL103); it prints checksums of what it computes, so a fix that changed the computation changes
// the output (tests/test_fix_differential.py builds and runs it before and after the fixes).
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(float *p, int n, float v) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = v + i % 7;
}

__global__ void axpy(const float *x, float *y, int n, float a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += a * x[i];
}

__global__ void square(float *p, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) p[i] = p[i] * p[i];
}

static float checksum(const float *d, int n) {
    static float h[4096];
    cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
    float s = 0.f;
    for (int i = 0; i < n; i++) s += h[i];
    return s;
}

int main() {
    const int n = 4096;
    const size_t bytes = n * sizeof(float);
    static float host[4096];
    for (int i = 0; i < n; i++) host[i] = 0.001f * i;

    float *a, *b, *c, *unused, *coeffs;
    cudaMalloc(&a, bytes);
    cudaMalloc(&b, bytes);
    cudaMalloc(&c, bytes);
    cudaMalloc(&unused, bytes);
    cudaMemset(unused, 0, bytes);
    cudaMalloc(&coeffs, bytes);
    cudaMemset(a, 0, bytes);
    cudaMemcpy(a, host, bytes, cudaMemcpyHostToDevice);
    fill<<<n / 256, 256>>>(b, n, 1.f);
    axpy<<<n / 256, 256>>>(a, b, n, 2.f);
    square<<<n / 256, 256>>>(b, n);
    for (int it = 0; it < 3; it++) {
        float *tmp;
        cudaMalloc(&tmp, bytes);
        cudaMemcpy(coeffs, host, bytes, cudaMemcpyHostToDevice);
        fill<<<n / 256, 256>>>(tmp, n, (float)it);
        axpy<<<n / 256, 256>>>(tmp, b, n, 0.5f);
        axpy<<<n / 256, 256>>>(coeffs, b, n, 0.25f);
        cudaFree(tmp);
    }
    fill<<<n / 256, 256>>>(c, n, 3.f);
    axpy<<<n / 256, 256>>>(b, c, n, 1.f);
    printf("b %.3f c %.3f\n", checksum(b, n), checksum(c, n));
    cudaFree(a);
    cudaFree(b);
    cudaFree(unused);
    cudaFree(coeffs);
    return 0;
}
