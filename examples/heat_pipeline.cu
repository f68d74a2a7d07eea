// A small heat-diffusion pipeline, written the way many CUDA programs are:
// everything allocated up front, freed at the end. `gpulint check examples/` finds
// where it holds GPU memory longer than it needs, or moves bytes it does not need to.
#include <cstdio>
#include <cstdlib>
#include <utility>
#include <vector>

#define MAX_CELLS (1 << 22)
#define STEPS 200
#define CHECK(call)                                                         \
  do {                                                                      \
    cudaError_t err_ = (call);                                              \
    if (err_ != cudaSuccess) {                                              \
      fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,                    \
              cudaGetErrorString(err_));                                    \
      exit(1);                                                              \
    }                                                                       \
  } while (0)

__global__ void diffuse(const float *in, float *out, const float *coeff, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n - 1) out[i] = in[i] + coeff[0] * (in[i - 1] - 2.f * in[i] + in[i + 1]);
}

__global__ void add_sources(float *field, const float *sources, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) field[i] += sources[i];
}

__global__ void reduce_max(const float *field, float *result, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) atomicMax((int *)result, __float_as_int(field[i]));
}

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 1 << 20;
  if (n > MAX_CELLS) n = MAX_CELLS;
  size_t bytes = n * sizeof(float);
  std::vector<float> h_field(n, 20.f), h_sources(n, 0.f);
  float h_coeff = 0.1f, h_max = 0.f;
  int blocks = (n + 255) / 256;

  float *d_cur, *d_next, *d_sources, *d_coeff, *d_max;
  CHECK(cudaMalloc(&d_cur, MAX_CELLS * sizeof(float)));
  CHECK(cudaMalloc(&d_next, MAX_CELLS * sizeof(float)));
  CHECK(cudaMalloc(&d_sources, bytes));
  CHECK(cudaMalloc(&d_coeff, sizeof(float)));
  CHECK(cudaMalloc(&d_max, sizeof(float)));

  CHECK(cudaMemset(d_cur, 0, bytes));
  CHECK(cudaMemcpy(d_cur, h_field.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_next, h_field.data(), bytes, cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_sources, h_sources.data(), bytes, cudaMemcpyHostToDevice));

  add_sources<<<blocks, 256>>>(d_cur, d_sources, n);

  for (int step = 0; step < STEPS; ++step) {
    CHECK(cudaMemcpy(d_coeff, &h_coeff, sizeof(float), cudaMemcpyHostToDevice));
    float *d_scratch;
    CHECK(cudaMalloc(&d_scratch, bytes));
    diffuse<<<blocks, 256>>>(d_cur, d_scratch, d_coeff, n);
    CHECK(cudaMemcpy(d_next, d_scratch, bytes, cudaMemcpyDeviceToDevice));
    CHECK(cudaFree(d_scratch));
    std::swap(d_cur, d_next);
  }

  CHECK(cudaMemset(d_max, 0, sizeof(float)));
  reduce_max<<<blocks, 256>>>(d_cur, d_max, n);
  CHECK(cudaMemcpy(&h_max, d_max, sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(h_field.data(), d_cur, bytes, cudaMemcpyDeviceToHost));
  printf("max temperature after %d steps: %f\n", STEPS, h_max);

  CHECK(cudaFree(d_cur));
  CHECK(cudaFree(d_next));
  CHECK(cudaFree(d_sources));
  CHECK(cudaFree(d_coeff));
  return 0;
}
