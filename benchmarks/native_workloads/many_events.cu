// A long run for the trace benchmarks: about EVENTS events (default 1,000,000) over OBJECTS
// objects (default 10,000), a thousand of them alive at a time.  Small kernels on four streams
// read one live object and write another; every 50th step re-uploads an input, every 500th the
// host waits for the device; objects are freed and replaced as the run goes.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void touch(float* out, const float* in, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] += in[i];
}

int main(int argc, char** argv) {
    long events = argc > 1 ? atol(argv[1]) : 1000000;
    int objects = argc > 2 ? atoi(argv[2]) : 10000;
    const int n = 1024, slots = objects < 1000 ? objects : 1000;
    std::vector<float*> live(slots);
    std::vector<float> host(n, 1.0f);
    cudaStream_t streams[4];
    for (auto& s : streams) cudaStreamCreate(&s);
    for (auto& p : live) cudaMalloc(&p, n * sizeof(float));
    long written = slots, allocated = slots;
    // Replace an object every `renew` steps so that `objects` are allocated over the run.
    long steps = events * 100 / 106, renew = objects > slots ? steps / (objects - slots) + 1 : steps + 1;
    for (long step = 0; written < events; ++step) {
        int s = static_cast<int>(step % slots);
        cudaStream_t stream = streams[step % 4];
        if (step % renew == renew - 1 && allocated < objects) {
            cudaDeviceSynchronize();
            cudaFree(live[s]);
            cudaMalloc(&live[s], n * sizeof(float));
            allocated += 1, written += 3;
        }
        if (step % 50 == 0) {
            cudaMemcpyAsync(live[s], host.data(), n * sizeof(float), cudaMemcpyHostToDevice, stream);
            written += 1;
        }
        touch<<<n / 256, 256, 0, stream>>>(live[(s * 7 + 1) % slots], live[s], n);
        written += 1;
        if (step % 500 == 499) {
            cudaDeviceSynchronize();
            written += 1;
        }
    }
    cudaDeviceSynchronize();
    for (auto p : live) cudaFree(p);
    for (auto& s : streams) cudaStreamDestroy(s);
    printf("%ld events, %ld objects\n", written, allocated);
    return 0;
}
