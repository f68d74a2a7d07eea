import torch

dev = torch.device("cuda")
w = torch.randn(256, 256).to(dev)  # confirm: GL102  run: GL102
b = torch.zeros(256)
b = b.cuda()  # run: GL102
print(float((w @ w).sum() + b.sum()))
