import torch

x = torch.randn(256, 128)
first = torch.relu(x @ x.t())  # run: GL002
print(float(first.sum() + x.sum()))
second = torch.sigmoid(x @ x.t())  # run: GL003
print(float(second.sum()))
