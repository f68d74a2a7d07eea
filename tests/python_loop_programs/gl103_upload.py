import torch

torch.manual_seed(0)  # deterministic: tests/test_fix_differential.py compares outputs

dev = torch.device("cuda")
h_w = torch.randn(256, 256)
x = torch.ones(1024, 256, device=dev)
for _ in range(4):
    w = h_w.to(dev)  # confirm: GL102 GL103  run: GL102 run: GL103
    x = torch.tanh(x @ w)
print(float(x.sum()))
