#!/usr/bin/env python3
"""zoo.py — the models users bring (issue 21's zoo), exported like the other
exporters (torch.jit.trace in train mode, common.export): torchvision models
by name (resnet18, mobilenet_v2, convnext_tiny, ...), and small hand-written
ones that cover what rkmate must trace: a ViT, a TransformerEncoder, an LSTM
and a GRU language model (ops returning several tensors), an unrolled
LSTMCell with in-place activations on chunks of the gates (in-place ops on
views whose original is read again), models returning a tuple, a list or a
dict, top-k / max with indices, a 3-level U-Net, a small ConvNeXt, BatchNorm +
dropout CNNs.

--list prints the names.  Sizes are small by default (--image 96, --batch 4).
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import torch  # noqa: E402

nn = torch.nn
F = torch.nn.functional

TORCHVISION = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "densenet121", "vgg11",
               "squeezenet1_0", "shufflenet_v2_x0_5", "convnext_tiny", "regnet_y_400mf"]
# Added after issue 21's first 22 models, to check the zoo's results on models
# nobody looked at before choosing them: the other torchvision classification
# families that run at 96x96 (maxvit_t and the ViT-B/L need 224), all of them,
# whatever their floors.  `--list` prints them after the first 22 (`--first`:
# only those).
TORCHVISION_MORE = ["resnet34", "resnext50_32x4d", "wide_resnet50_2", "googlenet", "mnasnet0_5",
                    "mobilenet_v3_small", "mobilenet_v3_large", "shufflenet_v2_x1_0", "regnet_x_400mf",
                    "regnet_y_800mf", "efficientnet_v2_s", "densenet169", "swin_t"]


class ViT(nn.Module):
    """A small ViT: patch embedding (conv), class token, position embedding,
    nn.TransformerEncoder (pre-LN, GELU), head on the class token."""

    def __init__(self, image, patch=8, dim=128, depth=4, heads=4, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, dim, patch, patch)
        n = (image // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, dim) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.1, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], 1) + self.pos
        x = self.enc(x)
        return self.head(self.norm(x[:, 0]))


class Encoder(nn.Module):
    """nn.TransformerEncoder, 4 layers (post-LN, ReLU, dropout 0.1) + a head."""

    def __init__(self, dim=64, depth=4, heads=4):
        super().__init__()
        layer = nn.TransformerEncoderLayer(dim, heads, 4 * dim, dropout=0.1)
        self.enc = nn.TransformerEncoder(layer, depth, enable_nested_tensor=False)
        self.head = nn.Linear(dim, dim)

    def forward(self, x):
        return self.head(self.enc(x))


class RnnLM(nn.Module):
    """Embedding, a 2-layer nn.LSTM or nn.GRU (aten::lstm / aten::gru: several
    new tensors per op), a linear head over the vocabulary."""

    def __init__(self, cell, vocab=100, dim=32, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.rnn = (nn.LSTM if cell == "lstm" else nn.GRU)(dim, dim, layers, batch_first=True)
        self.head = nn.Linear(dim, vocab)

    def forward(self, tok):
        y, _ = self.rnn(self.emb(tok))
        return self.head(y)


class UnrolledLSTM(nn.Module):
    """An LSTM cell written by hand and unrolled over time, with in-place ops
    as PyTorch allows them: a sigmoid_ on a slice (view) of the gates, which
    are read again after it, and a clamp_ on the cell state after another op
    read it."""

    def __init__(self, dim=32, steps=6):
        super().__init__()
        self.steps = steps
        self.wi = nn.Linear(dim, 4 * dim)
        self.wh = nn.Linear(dim, 4 * dim)
        self.head = nn.Linear(dim, dim)

    def forward(self, x):
        h = torch.zeros(x.shape[0], x.shape[2], dtype=x.dtype)
        c = torch.zeros(x.shape[0], x.shape[2], dtype=x.dtype)
        d = x.shape[2]
        for t in range(self.steps):
            gates = self.wi(x[:, t]) + self.wh(h)
            ifo = gates[:, :3 * d].sigmoid_()   # in place on a slice; gates is read again below
            g = torch.tanh(gates[:, 3 * d:])
            i, f, o = ifo.chunk(3, 1)
            c = f * c + i * g
            tc = torch.tanh(c)
            c.clamp_(-50.0, 50.0)               # in place on data tanh read before
            h = o * tc
        return self.head(h)


class MultiOut(nn.Module):
    """Returns several tensors (a tuple, a list or a dict), one of them an
    integer tensor (ignored by the loss); uses topk and max with indices."""

    def __init__(self, kind, dim=32):
        super().__init__()
        self.kind = kind
        self.a = nn.Linear(dim, dim)
        self.b = nn.Linear(dim, dim)

    def forward(self, x):
        h = torch.relu(self.a(x))
        top, idx = h.topk(4, dim=1)
        mx, arg = self.b(h).max(dim=1)
        y = self.b(h) * 2
        if self.kind == "tuple":
            return y, top
        if self.kind == "list":
            return [y, top, mx]
        return {"y": y, "top": top, "arg": arg}


class UNet(nn.Module):
    """A 3-level U-Net (conv-BN-ReLU pairs, max-pool down, transposed conv up, skip concatenations)."""

    def __init__(self, ch=16, levels=3):
        super().__init__()

        def pair(i, o):
            return nn.Sequential(nn.Conv2d(i, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
                                 nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(inplace=True))

        self.down = nn.ModuleList()
        c, chans = 3, []
        for lv in range(levels):
            self.down.append(pair(c, ch << lv))
            c = ch << lv
            chans.append(c)
        self.mid = pair(c, c * 2)
        c *= 2
        self.ups, self.dec = nn.ModuleList(), nn.ModuleList()
        for skip in reversed(chans):
            self.ups.append(nn.ConvTranspose2d(c, skip, 2, 2))
            self.dec.append(pair(2 * skip, skip))
            c = skip
        self.out = nn.Conv2d(c, 2, 1)

    def forward(self, x):
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = F.max_pool2d(x, 2)
        x = self.mid(x)
        for up, dec, s in zip(self.ups, self.dec, reversed(skips)):
            x = dec(torch.cat([up(x), s], 1))
        return self.out(x)


class BnDropCNN(nn.Module):
    """Conv-BN-ReLU-dropout stages; head: flatten + Linear (big weight) or global pooling."""

    def __init__(self, head, image, ch=32, stages=4):
        super().__init__()
        layers, c = [], 3
        for s in range(stages):
            o = ch * (1 << min(s, 2))
            layers += [nn.Conv2d(c, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU(),
                       nn.Dropout(0.1), nn.Conv2d(o, o, 3, padding=1), nn.BatchNorm2d(o), nn.ReLU()]
            if s < 2:
                layers.append(nn.MaxPool2d(2))
            c = o
        self.body = nn.Sequential(*layers)
        self.pool = head == "pool"
        side = image // 4
        self.fc = nn.Linear(c if self.pool else c * side * side, 10)

    def forward(self, x):
        x = self.body(x)
        x = x.mean((2, 3)) if self.pool else x.flatten(1)
        return self.fc(F.dropout(x, 0.2, self.training))


class ConvNeXtBlock(nn.Module):
    """ConvNeXt block: depthwise 7x7 conv, LayerNorm over channels (channels
    last through permute), Linear 4x + GELU + Linear, layer scale, residual."""

    def __init__(self, dim):
        super().__init__()
        self.dw = nn.Conv2d(dim, dim, 7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.gamma = nn.Parameter(torch.full((dim,), 0.1))

    def forward(self, x):
        y = self.dw(x).permute(0, 2, 3, 1)
        y = self.fc2(F.gelu(self.fc1(self.norm(y)))) * self.gamma
        return x + y.permute(0, 3, 1, 2)


class ConvNeXtMini(nn.Module):
    """A small ConvNeXt (stochastic depth off): 4x4 patchify stem + LayerNorm,
    two stages of ConvNeXt blocks with a LayerNorm + 2x2 conv downsampling,
    global pooling, LayerNorm, head."""

    def __init__(self, dims=(16, 32), depth=2, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, dims[0], 4, 4)
        self.stem_norm = nn.LayerNorm(dims[0], eps=1e-6)
        self.stages = nn.ModuleList(nn.Sequential(*[ConvNeXtBlock(d) for _ in range(depth)]) for d in dims)
        self.down_norm = nn.LayerNorm(dims[0], eps=1e-6)
        self.down = nn.Conv2d(dims[0], dims[1], 2, 2)
        self.norm = nn.LayerNorm(dims[1], eps=1e-6)
        self.head = nn.Linear(dims[1], classes)

    def forward(self, x):
        x = self.stem_norm(self.stem(x).permute(0, 2, 3, 1)).permute(0, 3, 1, 2)
        x = self.stages[0](x)
        x = self.down(self.down_norm(x.permute(0, 2, 3, 1)).permute(0, 3, 1, 2))
        x = self.stages[1](x)
        return self.head(self.norm(x.mean((2, 3))))


SMALL = {
    "vit": "ViT, 4 layers, dim 128 (images)",
    "transformer_encoder": "nn.TransformerEncoder x4, d 64 (seq 32 x batch 4 x 64)",
    "lstm_lm": "embedding + 2-layer nn.LSTM + head (tokens)",
    "gru_lm": "embedding + 2-layer nn.GRU + head (tokens)",
    "lstmcell": "hand-written LSTM cell unrolled 6 steps, in-place gate activations on chunks",
    "tuple_out": "returns (y, topk values)",
    "list_out": "returns [y, topk values, max values]",
    "dict_out": "returns {'y', 'top', 'arg' (int64 argmax)}",
    "unet": "3-level U-Net (images)",
    "convnext_mini": "small ConvNeXt: depthwise 7x7, LayerNorm via permute, Linear MLP, layer scale (images)",
    "bn_dropout_linear": "BN + dropout CNN, flatten + Linear head (images)",
    "bn_dropout_pool": "BN + dropout CNN, global-pool head (images)",
}


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    img = [common.float_input((args.batch, 3, args.image, args.image), dtype, g)]
    if name in TORCHVISION or name in TORCHVISION_MORE:
        import torchvision
        return getattr(torchvision.models, name)(weights=None, num_classes=10), img
    if name == "vit":
        return ViT(args.image), img
    if name == "transformer_encoder":
        return Encoder(), [common.float_input((32, args.batch, 64), dtype, g)]
    if name in ("lstm_lm", "gru_lm"):
        return RnnLM(name[:-3]), [common.token_ids((args.batch, 16), 100, g)]
    if name == "lstmcell":
        return UnrolledLSTM(), [common.float_input((args.batch, 6, 32), dtype, g)]
    if name in ("tuple_out", "list_out", "dict_out"):
        return MultiOut(name[:-4]), [common.float_input((args.batch, 32), dtype, g)]
    if name == "unet":
        return UNet(), img
    if name == "convnext_mini":
        return ConvNeXtMini(), img
    if name in ("bn_dropout_linear", "bn_dropout_pool"):
        return BnDropCNN(name.split("_")[-1], args.image), img
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    names = TORCHVISION + list(SMALL) + ([] if "--first" in argv else TORCHVISION_MORE)
    return common.model_set_main(argv, __doc__.splitlines()[0], "zoo.pt", names, build)


if __name__ == "__main__":
    sys.exit(main())
