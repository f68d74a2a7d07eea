
#pragma once
/* cooperative_groups.h, as much as host-side parsing needs: the group types and their members */
namespace cooperative_groups {
class thread_group {
 public:
  __device__ void sync() const;
  __device__ unsigned long long size() const;
  __device__ unsigned long long num_threads() const;
  __device__ unsigned long long thread_rank() const;
  __device__ bool is_valid() const;
};
class thread_block : public thread_group {
 public:
  __device__ dim3 group_index() const;
  __device__ dim3 thread_index() const;
  __device__ dim3 group_dim() const;
  __device__ dim3 dim_threads() const;
};
class grid_group : public thread_group {
 public:
  __device__ dim3 group_dim() const;
  __device__ dim3 dim_blocks() const;
  __device__ dim3 block_index() const;
  __device__ unsigned long long block_rank() const;
  __device__ unsigned long long num_blocks() const;
};
class multi_grid_group : public thread_group {
 public:
  __device__ unsigned int grid_rank() const;
  __device__ unsigned int num_grids() const;
};
class coalesced_group : public thread_group {
 public:
  template <class T> __device__ T shfl(T var, int srcRank) const;
  template <class T> __device__ T shfl_down(T var, unsigned int delta) const;
  template <class T> __device__ T shfl_up(T var, unsigned int delta) const;
  template <class T> __device__ T shfl_xor(T var, unsigned int laneMask) const;
  __device__ unsigned int ballot(int predicate) const;
  __device__ int any(int predicate) const;
  __device__ int all(int predicate) const;
  template <class T> __device__ unsigned int match_any(T val) const;
  __device__ unsigned long long meta_group_rank() const;
  __device__ unsigned long long meta_group_size() const;
};
template <unsigned int Size, class ParentT = void>
class thread_block_tile : public coalesced_group {
 public:
  __device__ thread_block_tile();
  template <class P> __device__ thread_block_tile(const thread_block_tile<Size, P> &other);
};
__device__ thread_block this_thread_block();
__device__ grid_group this_grid();
__device__ multi_grid_group this_multi_grid();
__device__ coalesced_group coalesced_threads();
template <unsigned int Size, class ParentT> __device__ thread_block_tile<Size, ParentT> tiled_partition(const ParentT &g);
__device__ thread_group tiled_partition(const thread_group &parent, unsigned int tilesz);
__device__ coalesced_group binary_partition(const coalesced_group &g, bool pred);
template <unsigned int Size, class P>
__device__ thread_block_tile<Size> binary_partition(const thread_block_tile<Size, P> &g, bool pred);
template <class G> __device__ void sync(const G &g);
template <class T> struct plus { __device__ T operator()(T a, T b) const { return a + b; } };
template <class T> struct less { __device__ T operator()(T a, T b) const { return a < b ? a : b; } };
template <class T> struct greater { __device__ T operator()(T a, T b) const { return a < b ? b : a; } };
template <class T> struct bit_and { __device__ T operator()(T a, T b) const { return a & b; } };
template <class T> struct bit_or { __device__ T operator()(T a, T b) const { return a | b; } };
template <class T> struct bit_xor { __device__ T operator()(T a, T b) const { return a ^ b; } };
template <class G, class T, class Op> __device__ T reduce(const G &g, T val, Op op);
template <class G, class T, class Op> __device__ T inclusive_scan(const G &g, T val, Op op);
template <class G, class T> __device__ T inclusive_scan(const G &g, T val);
template <class G, class T, class Op> __device__ T exclusive_scan(const G &g, T val, Op op);
template <class G, class T> __device__ T exclusive_scan(const G &g, T val);
template <class G, class T, class S> __device__ void memcpy_async(const G &g, T *dst, const T *src, S count);
template <class G> __device__ void wait(const G &g);
template <unsigned int N, class G> __device__ void wait_prior(const G &g);
namespace details {}
namespace experimental {}
}  // namespace cooperative_groups
