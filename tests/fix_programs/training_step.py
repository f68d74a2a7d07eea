# A small training-style loop whose memory waste gpulint fixes; it prints what it computes, so a
# fix that changed the computation changes the output (tests/test_fix_differential.py).
import torch

torch.manual_seed(0)
dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")

weights = torch.ones(64, 64, device=dev) / 64
bias = torch.full((64,), 0.5, device=dev)
scratch = torch.zeros(64, 64, device=dev)
lookup = torch.arange(64, dtype=torch.float32).to(dev)
host_scale = torch.linspace(0.5, 1.5, 64)

x = torch.ones(32, 64, device=dev)
for step in range(4):
    scale = host_scale.to(dev)
    x = torch.tanh(x @ weights + bias) * scale
    torch.cuda.empty_cache()
total = x.sum()
for step in range(3):
    x = x * 0.9
buffer = torch.zeros(32, 64, device=dev)
buffer.copy_(x)
print(round(float(total), 4), round(float(buffer.sum()), 4), round(float(lookup.sum()), 4))
