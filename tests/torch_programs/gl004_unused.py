import torch

x = torch.randn(64, 32)
scratch = torch.empty(4096)  # run: GL004
y = torch.relu(x @ x.t())
print(float(y.sum()), scratch.shape)
