import torch

torch.manual_seed(0)  # deterministic: tests/test_fix_differential.py compares outputs

dev = torch.device("cuda")
w = torch.randn(256, 256).to(dev)  # run: GL102 (staging once, at module level: left out statically)
b = torch.zeros(256)
b = b.cuda()  # run: GL102
print(float((w @ w).sum() + b.sum()))
