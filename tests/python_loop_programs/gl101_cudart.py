from cuda.bindings import runtime as rt

size = 1 << 20
for _ in range(3):
    # Only a memset ever touches it: unused (GL004), once per pass.
    err, buf = rt.cudaMalloc(size)  # confirm: GL101  run: GL004 run: GL101
    rt.cudaMemset(buf, 0, size)
    rt.cudaFree(buf)
rt.cudaDeviceSynchronize()
