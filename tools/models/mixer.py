#!/usr/bin/env python3
"""mixer.py — an MLP-Mixer (Tolstikhin et al. 2021) in plain torch.nn, exported
with torch.jit.trace in train mode.

Patch embedding (a convolution with stride = patch), then n mixer layers of
[LayerNorm, token-mixing MLP across patches (on the transposed activations),
residual; LayerNorm, channel-mixing MLP, residual], final LayerNorm, mean over
patches, linear head. MLPs are Linear-GELU-(dropout)-Linear-(dropout); dropout
nodes appear only with --dropout > 0.
Input: images (batch x 3 x size x size, --dtype). Output: logits (batch x classes).
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import torch  # noqa: E402

nn = torch.nn


class MlpBlock(nn.Module):
    def __init__(self, dim, hidden, dropout):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()

    def forward(self, x):
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class MixerLayer(nn.Module):
    def __init__(self, tokens, channels, token_hidden, channel_hidden, dropout):
        super().__init__()
        self.norm1 = nn.LayerNorm(channels)
        self.token_mlp = MlpBlock(tokens, token_hidden, dropout)
        self.norm2 = nn.LayerNorm(channels)
        self.channel_mlp = MlpBlock(channels, channel_hidden, dropout)

    def forward(self, x):  # x: batch x tokens x channels
        y = self.norm1(x).transpose(1, 2)
        x = x + self.token_mlp(y).transpose(1, 2)
        x = x + self.channel_mlp(self.norm2(x))
        return x


class MlpMixer(nn.Module):
    def __init__(self, image, patch, channels, token_hidden, channel_hidden, layers, classes, dropout):
        super().__init__()
        tokens = (image // patch) ** 2
        self.stem = nn.Conv2d(3, channels, kernel_size=patch, stride=patch)
        self.layers = nn.Sequential(*[MixerLayer(tokens, channels, token_hidden, channel_hidden, dropout)
                                      for _ in range(layers)])
        self.norm = nn.LayerNorm(channels)
        self.head = nn.Linear(channels, classes)

    def forward(self, img):
        x = self.stem(img).flatten(2).transpose(1, 2)  # batch x tokens x channels
        x = self.layers(x)
        x = self.norm(x)
        return self.head(x.mean(dim=1))


def main(argv=None):
    p = common.make_parser(__doc__.splitlines()[0], "mixer.pt")
    p.add_argument("--layers", type=common.nonneg_int, default=4, help="mixer layers (default %(default)s)")
    p.add_argument("--image", type=common.positive_int, default=32,
                   help="image height and width (default %(default)s)")
    p.add_argument("--patch", type=common.positive_int, default=4,
                   help="patch size; must divide --image (default %(default)s)")
    p.add_argument("--channels", type=common.positive_int, default=128,
                   help="hidden channels C (default %(default)s)")
    p.add_argument("--token-hidden", type=common.positive_int, default=64,
                   help="token-mixing MLP width (default %(default)s)")
    p.add_argument("--channel-hidden", type=common.positive_int, default=256,
                   help="channel-mixing MLP width (default %(default)s)")
    p.add_argument("--batch", type=common.positive_int, default=4, help="batch size (default %(default)s)")
    p.add_argument("--classes", type=common.positive_int, default=10,
                   help="output classes (default %(default)s)")
    p.add_argument("--dropout", type=common.probability, default=0.0,
                   help="dropout in the MLPs (default %(default)s: none, as in the paper)")
    args = p.parse_args(argv)
    if args.image % args.patch:
        p.error("--patch %d must divide --image %d" % (args.patch, args.image))
    common.setup(args)
    dtype = common.DTYPES[args.dtype]
    model = MlpMixer(args.image, args.patch, args.channels, args.token_hidden, args.channel_hidden,
                     args.layers, args.classes, args.dropout).to(dtype).train()
    g = common.input_generator(args.seed)
    inputs = [common.float_input((args.batch, 3, args.image, args.image), dtype, g)]
    config = {k: getattr(args, k) for k in ("layers", "image", "patch", "channels", "token_hidden",
                                            "channel_hidden", "batch", "classes", "dropout")}
    common.export(model, inputs, args, "mlp_mixer", config)


if __name__ == "__main__":
    main()
