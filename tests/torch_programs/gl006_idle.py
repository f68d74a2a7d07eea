import torch

skip = torch.randn(128, 128)  # run: GL006
h = torch.relu(skip @ skip)
for _ in range(4):
    h = torch.tanh(h @ h)
out = h + skip
print(float(out.sum()))
