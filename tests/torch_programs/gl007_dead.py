import torch

src = torch.randn(128, 128)
acc = torch.zeros(128, 128)  # run: GL007
acc.copy_(src)
print(float(acc.sum() + src.sum()))
