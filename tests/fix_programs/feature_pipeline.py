# Features kept alive through a loop that no longer needs them (GL002: `del` after the last use);
# prints what it computes.
import torch

dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")

features = torch.ones(256, 128, device=dev) * 0.25
summary = features.mean(dim=0)
norms = features.norm(dim=1)
print(round(float(norms.sum()), 4))
state = torch.zeros(128, device=dev)
for step in range(5):
    state = torch.tanh(state + summary * step)
print(round(float(state.sum()), 4))
