/* declared by gpulint_cuda_stub.h */
