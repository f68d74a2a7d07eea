import torch

dev = "cuda" if torch.cuda.is_available() else "cpu"
x = torch.ones(256, 256, device=dev)
for _ in range(3):
    x = torch.tanh(x @ x)
    torch.cuda.empty_cache()  # confirm: GL101
print(float(x.sum()))
