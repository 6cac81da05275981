"""The small BatchNorm + dropout conv net shared by test_train.py (`rkmate
train`) and test_python.py (the Python package): ResNet-like, conv +
BatchNorm + ReLU + dropout residual blocks, a linear head over the pooled
features."""
import torch


class BnDropNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        nn = torch.nn
        self.stem = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.convs = nn.ModuleList([nn.Conv2d(8, 8, 3, padding=1) for _ in range(5)])
        self.bns = nn.ModuleList([nn.BatchNorm2d(8) for _ in range(5)])
        self.drop = nn.Dropout(0.2)
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        for c, b in zip(self.convs, self.bns):
            x = x + self.drop(torch.relu(b(c(x))))
        return self.head(x.mean((2, 3)))
