#!/usr/bin/env python3
"""unseen.py — models nobody tuned rkmate for (issue 21's sweep after the zoo,
docs/coverage.md "Unseen models"): torchvision classification, segmentation
and video models that are not in tools/models/zoo.py, and hand-written ones
with idioms the zoo lacks — a GPT on nn.MultiheadAttention with a bool mask
buffer, an MLP-Mixer, GroupNorm / SiLU / pixel_shuffle / InstanceNorm with a
second (conditioning) input, an hourglass with ConvTranspose, einsum
attention, masked_fill and where, Swin V2's position-bias MLP (in-place ReLU
on a view), an audio model (Conv1d, in-place SiLU, GLU, bidirectional LSTM,
PReLU, Hardswish, adaptive_max_pool1d), in-place ops on slices with a
stop-gradient, gather, cumsum, unfold and tied weights, and nn.Transformer
with two inputs.  Exported like the zoo (tools/models/common.export), with
the zoo's options, so that `tools/bench/zoo.py --models-script
tools/models/unseen.py` runs them through the same bench.

--list prints the names.
"""

import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import torch  # noqa: E402

nn = torch.nn
F = torch.nn.functional

TV = ["squeezenet1_1", "alexnet", "vgg13_bn", "resnet101", "efficientnet_b1", "mnasnet1_0", "regnet_y_1_6gf",
      "densenet201", "convnext_small", "swin_v2_t", "shufflenet_v2_x1_5"]
SEG = ["fcn_resnet50", "lraspp_mobilenet_v3_large", "deeplabv3_mobilenet_v3_large"]
VIDEO = ["r3d_18", "r2plus1d_18"]


class GPT(nn.Module):
    """Token + learned position embeddings, pre-LN blocks of nn.MultiheadAttention (dropout, a bool
    causal-mask buffer) and a GELU MLP, an untied head."""

    def __init__(self, vocab=256, dim=128, layers=4, heads=4, seq=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim); self.pos = nn.Parameter(torch.zeros(1, seq, dim))
        self.blocks = nn.ModuleList([nn.ModuleDict(dict(ln1=nn.LayerNorm(dim), attn=nn.MultiheadAttention(dim, heads, batch_first=True, dropout=0.1),
                       ln2=nn.LayerNorm(dim), mlp=nn.Sequential(nn.Linear(dim, 4*dim), nn.GELU(), nn.Linear(4*dim, dim), nn.Dropout(0.1)))) for _ in range(layers)])
        self.ln = nn.LayerNorm(dim); self.head = nn.Linear(dim, vocab, bias=False)
        self.register_buffer("mask", torch.triu(torch.ones(seq, seq, dtype=torch.bool), 1))
    def forward(self, t):
        x = self.tok(t) + self.pos[:, :t.shape[1]]
        for b in self.blocks:
            h = b["ln1"](x)
            x = x + b["attn"](h, h, h, attn_mask=self.mask, need_weights=False)[0]
            x = x + b["mlp"](b["ln2"](x))
        return self.head(self.ln(x))

class MLPMixer(nn.Module):
    """Patch conv, token-mixing and channel-mixing MLPs with LayerNorm and transposes."""

    def __init__(self, image=96, patch=8, dim=96, depth=4):
        super().__init__()
        n = (image // patch) ** 2
        self.stem = nn.Conv2d(3, dim, patch, patch)
        self.layers = nn.ModuleList([nn.ModuleDict(dict(n1=nn.LayerNorm(dim), tok=nn.Sequential(nn.Linear(n, 2*n), nn.GELU(), nn.Linear(2*n, n)),
                        n2=nn.LayerNorm(dim), ch=nn.Sequential(nn.Linear(dim, 4*dim), nn.GELU(), nn.Linear(4*dim, dim)))) for _ in range(depth)])
        self.head = nn.Linear(dim, 10)
    def forward(self, x):
        x = self.stem(x).flatten(2).transpose(1, 2)
        for l in self.layers:
            x = x + l["tok"](l["n1"](x).transpose(1, 2)).transpose(1, 2)
            x = x + l["ch"](l["n2"](x))
        return self.head(x.mean(1))

class GNConv(nn.Module):
    """GroupNorm, SiLU, upsample (interpolate), pixel_shuffle, instance norm, two inputs."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 32, 3, padding=1); self.g1 = nn.GroupNorm(8, 32)
        self.c2 = nn.Conv2d(32, 64, 3, stride=2, padding=1); self.g2 = nn.GroupNorm(8, 64)
        self.c3 = nn.Conv2d(64, 128, 3, padding=1); self.inorm = nn.InstanceNorm2d(32, affine=True)
        self.c4 = nn.Conv2d(32 + 32, 16, 3, padding=1); self.emb = nn.Linear(8, 32)
    def forward(self, x, cond):
        a = F.silu(self.g1(self.c1(x))) + self.emb(cond)[:, :, None, None]
        b = F.silu(self.g2(self.c2(a)))
        u = F.pixel_shuffle(self.c3(b), 2)
        u = self.inorm(u)
        v = F.interpolate(b[:, :32], scale_factor=2, mode="nearest")
        y = self.c4(torch.cat([u + v, a], 1))
        return y.clamp(-3, 3).mean((2, 3))

class Hourglass(nn.Module):
    """stack, where, masked_fill, softmax, bmm, einsum, leaky_relu, elu, avg pool, ConvTranspose."""
    def __init__(self):
        super().__init__()
        self.c = nn.Conv2d(3, 24, 3, padding=1); self.bn = nn.BatchNorm2d(24)
        self.d = nn.Conv2d(24, 48, 4, 2, 1); self.u = nn.ConvTranspose2d(48, 24, 4, 2, 1)
        self.q = nn.Linear(24, 24); self.k = nn.Linear(24, 24); self.o = nn.Linear(24, 10)
    def forward(self, x):
        a = F.leaky_relu(self.bn(self.c(x)), 0.1)
        b = F.elu(self.d(F.avg_pool2d(a, 3, 1, 1)))
        c = self.u(b) + a
        t = F.adaptive_avg_pool2d(c, 8).flatten(2).transpose(1, 2)   # B,64,24
        att = torch.einsum("bid,bjd->bij", self.q(t), self.k(t)) / math.sqrt(24)
        att = att.masked_fill(att > 5, -1e4).softmax(-1)
        t = torch.bmm(att, t)
        t = torch.where(t > 0, t, 0.5 * t)
        return self.o(torch.stack([t.mean(1), t.amax(1)], 0).sum(0))

class Cpb(nn.Module):
    """swin v2's continuous position bias: an MLP with an in-place ReLU on a buffer (no input dependency)."""
    def __init__(self, heads=4, n=5, dim=16):
        super().__init__()
        self.register_buffer("table", torch.randn(1, n, n, 2))
        self.cpb = nn.Sequential(nn.Linear(2, 64), nn.ReLU(inplace=True), nn.Linear(64, heads, bias=False))
        self.q = nn.Linear(dim, dim); self.o = nn.Linear(dim, dim); self.heads = heads; self.n = n
    def forward(self, x):  # x: B, n*n, dim
        bias = self.cpb(self.table).view(-1, self.heads).t()
        bias = 16 * torch.sigmoid(bias)
        h = self.q(x).view(x.shape[0], self.n * self.n, self.heads, -1).transpose(1, 2)   # B, heads, N, d
        h = h * (1 + bias[None, :, :, None])
        return self.o(h.transpose(1, 2).reshape(x.shape[0], self.n * self.n, -1))

class Audio(nn.Module):
    """Conv1d, SiLU(inplace), GLU, bidirectional LSTM, PReLU, Hardswish, AdaptiveMaxPool1d."""
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv1d(8, 32, 5, padding=2); self.act = nn.SiLU(inplace=True); self.c2 = nn.Conv1d(32, 64, 3, padding=1)
        self.rnn = nn.LSTM(32, 24, batch_first=True, bidirectional=True); self.pr = nn.PReLU(); self.h = nn.Hardswish()
        self.o = nn.Linear(48, 6)
    def forward(self, x):   # B, 8, T
        y = self.act(self.c1(x))
        y = F.glu(self.c2(y), dim=1)          # B,32,T
        y, _ = self.rnn(y.transpose(1, 2))     # B,T,48
        y = self.h(self.pr(y))
        return self.o(F.adaptive_max_pool1d(y.transpose(1, 2), 1).squeeze(-1))

class Tricks(nn.Module):
    """detach (stop-gradient), in-place add on a slice, masked_fill_, weight tying, gather, cumsum,
    index_select, F.normalize, clone, rand_like noise, dropout2d, unfold."""
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(50, 32, padding_idx=0); self.l1 = nn.Linear(32, 32); self.c = nn.Conv2d(3, 8, 3, padding=1)
        self.l2 = nn.Linear(8 * 9, 32)
    def forward(self, tok, img):
        e = self.emb(tok)                         # B, L, 32
        h = self.l1(e)
        h[:, 1:] += 0.5 * h[:, :-1].detach()   # in place on a slice, a stop-gradient
        h = h.masked_fill(tok[..., None] == 0, 0.0)
        h = F.normalize(h, dim=-1).cumsum(1)
        idx = torch.argsort(tok, dim=1)[..., None].expand(-1, -1, 32)
        g = torch.gather(h, 1, idx) + 0.01 * torch.rand_like(h)
        c = F.dropout2d(F.relu(self.c(img)), 0.2, training=True)     # B,8,H,W
        u = F.unfold(c, 3, stride=3).transpose(1, 2)              # B, P, 72
        u = self.l2(u).mean(1, keepdim=True)
        y = g.clone() + u
        return y @ self.emb.weight.t()             # tied weights

class EncDec(nn.Module):
    """nn.Transformer (encoder-decoder) with a causal mask and key padding: two inputs."""
    def __init__(self):
        super().__init__()
        self.t = nn.Transformer(32, 4, 2, 2, 64, dropout=0.1, batch_first=True)
        self.o = nn.Linear(32, 11)
    def forward(self, src, tgt):
        m = torch.triu(torch.full((tgt.shape[1], tgt.shape[1]), float("-inf")), 1)
        return self.o(self.t(src, tgt, tgt_mask=m))

SMALL = ["gpt", "mlpmixer", "gnconv", "hourglass", "cpb", "audio", "tricks", "encdec"]


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    img = [common.float_input((args.batch, 3, args.image, args.image), dtype, g)]
    if name in TV or name in SEG or name in VIDEO:
        import torchvision
        if name in TV:
            return getattr(torchvision.models, name)(weights=None, num_classes=10), img
        if name in SEG:
            kw = dict(weights=None, weights_backbone=None, num_classes=5)
            if name.startswith("fcn"):
                kw["aux_loss"] = True
            return getattr(torchvision.models.segmentation, name)(**kw), img
        return (getattr(torchvision.models.video, name)(weights=None, num_classes=10),
                [common.float_input((2, 3, 8, 48, 48), dtype, g)])
    if name == "gpt":
        return GPT(), [common.token_ids((args.batch, 64), 256, g)]
    if name == "mlpmixer":
        return MLPMixer(args.image), img
    if name == "gnconv":
        return GNConv(), img + [common.float_input((args.batch, 8), dtype, g)]
    if name == "hourglass":
        return Hourglass(), img
    if name == "cpb":
        return Cpb(), [common.float_input((args.batch, 25, 16), dtype, g)]
    if name == "audio":
        return Audio(), [common.float_input((args.batch, 8, 200), dtype, g)]
    if name == "tricks":
        return Tricks(), [common.token_ids((args.batch, 20), 50, g), common.float_input((args.batch, 3, 24, 24), dtype, g)]
    if name == "encdec":
        return EncDec(), [common.float_input((args.batch, 12, 32), dtype, g), common.float_input((args.batch, 9, 32), dtype, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen.pt", TV + SEG + VIDEO + SMALL, build)


if __name__ == "__main__":
    sys.exit(main())
