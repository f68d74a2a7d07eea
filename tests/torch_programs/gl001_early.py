import torch

w = torch.randn(128, 128)  # run: GL001
x = torch.ones(128, 128)
for _ in range(3):
    x = torch.tanh(x @ x)
y = x @ w
print(float(y.sum()))
