from cuda.bindings import runtime as rt

size = 1 << 20
for _ in range(3):
    err, buf = rt.cudaMalloc(size)  # confirm: GL101
    rt.cudaMemset(buf, 0, size)
    rt.cudaFree(buf)
rt.cudaDeviceSynchronize()
