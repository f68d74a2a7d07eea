"""A small CNN trained for 200 steps on random data: the PyTorch program of the grouping
benchmark (docs/benchmarks.md).  Runs on CUDA when there is one, else on the CPU."""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

STEPS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
torch.manual_seed(0)


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(32)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(64)
        self.conv3 = nn.Conv2d(64, 128, 3, padding=1)
        self.fc1 = nn.Linear(128 * 4 * 4, 256)
        self.fc2 = nn.Linear(256, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.bn2(self.conv2(x))), 2)
        x = F.max_pool2d(F.relu(self.conv3(x)), 2)
        x = torch.flatten(x, 1)
        x = F.dropout(F.relu(self.fc1(x)), 0.25, self.training)
        return self.fc2(x)


model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
# The whole "dataset" lives on the host and each batch is copied over, as a DataLoader would.
images = torch.randn(64 * 8, 3, 32, 32)
labels = torch.randint(0, 10, (64 * 8,))

for step in range(STEPS):
    start = (step % 8) * 64
    x = images[start:start + 64].to(device)
    y = labels[start:start + 64].to(device)
    optimizer.zero_grad()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    if step % 50 == 0:
        print(f"step {step}: loss {loss.item():.3f}")

model.eval()
with torch.no_grad():
    test = torch.randn(256, 3, 32, 32).to(device)
    print("eval logits", model(test).shape)
