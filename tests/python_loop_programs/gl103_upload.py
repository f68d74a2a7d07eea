import torch

dev = torch.device("cuda")
h_w = torch.randn(512, 512)
x = torch.ones(512, 512, device=dev)
for _ in range(4):
    w = h_w.to(dev)  # confirm: GL103
    x = torch.tanh(x @ w)
print(float(x.sum()))
