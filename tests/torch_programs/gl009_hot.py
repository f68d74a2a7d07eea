import torch

table = torch.randn(1000, 16)  # run: GL009
total = torch.nn.functional.embedding(torch.arange(1000), table).sum()
hot = torch.zeros(200, dtype=torch.long)
for _ in range(5):
    total = total + torch.nn.functional.embedding(hot, table).sum()
print(float(total))
