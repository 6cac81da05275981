#!/usr/bin/env python3
"""resnet.py — a torchvision ResNet (18/34/50/101/152), exported with
torch.jit.trace in train mode (batch norm in training mode, updating its
running statistics).

With --width-scale 1 (the default) the model is exactly torchvision's
resnetNN(num_classes=...); another scale multiplies every stage's channel
count (64, 128, 256, 512) while keeping torchvision's blocks. torchvision's
ResNet uses in-place ReLU (aten::relu_) and an in-place residual add
(aten::add_), so the traced graph has in-place nodes.
Input: images (batch x 3 x size x size, --dtype). Output: logits (batch x classes).
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import torch  # noqa: E402

import torchvision  # noqa: E402
from torchvision.models import resnet as tv_resnet  # noqa: E402

nn = torch.nn

DEPTHS = {
    18: (tv_resnet.BasicBlock, [2, 2, 2, 2]),
    34: (tv_resnet.BasicBlock, [3, 4, 6, 3]),
    50: (tv_resnet.Bottleneck, [3, 4, 6, 3]),
    101: (tv_resnet.Bottleneck, [3, 4, 23, 3]),
    152: (tv_resnet.Bottleneck, [3, 8, 36, 3]),
}


class ScaledResNet(tv_resnet.ResNet):
    """torchvision's ResNet with every stage's width multiplied by `scale`
    (same code as torchvision.models.resnet.ResNet.__init__, scaled widths)."""

    def __init__(self, block, layers, num_classes, scale):
        nn.Module.__init__(self)
        w = [max(1, int(round(c * scale))) for c in (64, 128, 256, 512)]
        self._norm_layer = nn.BatchNorm2d
        self.inplanes = w[0]
        self.dilation = 1
        self.groups = 1
        self.base_width = 64
        self.conv1 = nn.Conv2d(3, self.inplanes, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, w[0], layers[0])
        self.layer2 = self._make_layer(block, w[1], layers[1], stride=2)
        self.layer3 = self._make_layer(block, w[2], layers[2], stride=2)
        self.layer4 = self._make_layer(block, w[3], layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(w[3] * block.expansion, num_classes)
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")
            elif isinstance(m, nn.BatchNorm2d):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)


def build(depth, classes, scale):
    if scale == 1.0:
        return getattr(torchvision.models, "resnet%d" % depth)(num_classes=classes)
    block, layers = DEPTHS[depth]
    return ScaledResNet(block, layers, classes, scale)


def main(argv=None):
    p = common.make_parser(__doc__.splitlines()[0], "resnet.pt")
    p.add_argument("--depth", type=int, choices=sorted(DEPTHS), default=18,
                   help="ResNet depth (default %(default)s)")
    p.add_argument("--width-scale", type=common.positive_float, default=1.0,
                   help="multiply every stage's channels by this (default %(default)s: torchvision's model)")
    p.add_argument("--image", type=common.positive_int, default=64,
                   help="image height and width (default %(default)s)")
    p.add_argument("--batch", type=common.positive_int, default=4, help="batch size (default %(default)s)")
    p.add_argument("--classes", type=common.positive_int, default=10,
                   help="output classes (default %(default)s)")
    args = p.parse_args(argv)
    if args.image < 32:
        p.error("--image %d: ResNet downsamples 32x; use at least 32" % args.image)
    common.setup(args)
    dtype = common.DTYPES[args.dtype]
    model = build(args.depth, args.classes, args.width_scale).to(dtype).train()
    g = common.input_generator(args.seed)
    inputs = [common.float_input((args.batch, 3, args.image, args.image), dtype, g)]
    config = {"depth": args.depth, "width_scale": args.width_scale, "image": args.image,
              "batch": args.batch, "classes": args.classes, "torchvision": torchvision.__version__}
    common.export(model, inputs, args, "resnet%d" % args.depth, config)


if __name__ == "__main__":
    main()
