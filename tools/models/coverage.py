#!/usr/bin/env python3
"""coverage.py — models of other shapes and idioms than the zoo (issue 21's
coverage sweep), exported like the other exporters (torch.jit.trace in train
mode, common.export; --pt2 for torch.export): torchvision segmentation (dict
outputs, aux head), video (conv3d) and transformer models by name, and small
hand-written ones: a BERT-like encoder (three embeddings, an attention-mask
input), a GPT-like decoder with a tied LM head and a triu/masked_fill causal
mask, an encoder-decoder with two inputs, a diffusion-style UNet (GroupNorm,
SiLU, sinusoidal timestep embedding, interpolate, cat skips), a Conv1d audio
model, a mixture-of-experts layer (topk routing, gather / index_select /
scatter_add), a grab bag of tensor ops (einsum, cumsum, pad, pixel_shuffle,
roll, flip, chunk, stack), cross_entropy inside the model, in-place `+=` and
`x[:, 0] = ...`, a frozen backbone, buffers read in forward, bfloat16,
int64 + float inputs together, scaled_dot_product_attention(is_causal) with a
bool padding-mask input, detach + randn_like, FFT (complex activations),
EmbeddingBag with offsets, data written into a `torch.zeros` made from sizes
(a Fourier neural operator's modes), parameters expanded to the batch and
read by several ops (a Perceiver's latents, DETR's query positions).

--list prints the names.  Sizes are small by default (--image 32, --batch 2).
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

# torchvision models by name: (constructor keyword arguments, input builder)
TORCHVISION = {
    "fcn_resnet50": "segmentation: dict output {'out', 'aux'}, aux head",
    "deeplabv3_mobilenet_v3_large": "segmentation: ASPP, dict output with aux head",
    "lraspp_mobilenet_v3_large": "segmentation: LR-ASPP, sigmoid gating, dict output",
    "r3d_18": "video: conv3d ResNet on a tiny clip (2x3x4x32x32)",
    "maxvit_t": "MaxViT (torchvision's MaxVit, 2 small stages, partition 4: block/grid attention, relative position bias buffers), 64x64",
    "vit_b_16": "torchvision's VisionTransformer (ViT-B/16's code) at 32x32, 2 layers, width 64, class token",
}


class BertLike(nn.Module):
    """Token + position + token-type embeddings, LayerNorm, dropout, encoder
    layers with an additive attention mask made from an int64 mask input,
    GELU MLP, a pooler (tanh) on the first token."""

    def __init__(self, vocab=100, dim=32, heads=4, layers=2, seq=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.typ = nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim)
        self.drop = nn.Dropout(0.1)
        self.heads = heads
        self.qkv = nn.ModuleList(nn.Linear(dim, 3 * dim) for _ in range(layers))
        self.proj = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.ln1 = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.fc1 = nn.ModuleList(nn.Linear(dim, 4 * dim) for _ in range(layers))
        self.fc2 = nn.ModuleList(nn.Linear(4 * dim, dim) for _ in range(layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.pool = nn.Linear(dim, dim)

    def forward(self, ids, types, mask):
        b, t = ids.shape
        pos = torch.arange(t, device=ids.device).unsqueeze(0)
        x = self.drop(self.ln(self.tok(ids) + self.pos(pos) + self.typ(types)))
        ext = (1.0 - mask[:, None, None, :].to(x.dtype)) * -10000.0
        d = x.shape[-1] // self.heads
        for qkv, proj, ln1, fc1, fc2, ln2 in zip(self.qkv, self.proj, self.ln1, self.fc1, self.fc2, self.ln2):
            q, k, v = qkv(x).split(x.shape[-1], dim=2)
            q = q.view(b, t, self.heads, d).transpose(1, 2)
            k = k.view(b, t, self.heads, d).transpose(1, 2)
            v = v.view(b, t, self.heads, d).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) / math.sqrt(d) + ext
            att = self.drop(att.softmax(-1))
            y = (att @ v).transpose(1, 2).reshape(b, t, -1)
            x = ln1(x + self.drop(proj(y)))
            x = ln2(x + self.drop(fc2(F.gelu(fc1(x)))))
        return x, torch.tanh(self.pool(x[:, 0]))


class GptTied(nn.Module):
    """A GPT-like decoder: the LM head shares the token embedding's weight;
    causal mask from torch.triu + masked_fill; pre-LN blocks."""

    def __init__(self, vocab=100, dim=32, heads=4, layers=2, seq=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(1, seq, dim) * 0.02)
        self.blocks = nn.ModuleList(nn.TransformerEncoderLayer(dim, heads, 4 * dim, 0.1, batch_first=True,
                                                               norm_first=True) for _ in range(layers))
        self.heads = heads
        self.attn_ln = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.attn = nn.ModuleList(nn.Linear(dim, 3 * dim) for _ in range(layers))
        self.out = nn.ModuleList(nn.Linear(dim, dim) for _ in range(layers))
        self.mlp_ln = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.mlp = nn.ModuleList(nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
                                 for _ in range(layers))
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.head.weight = self.tok.weight  # weight tying

    def forward(self, ids):
        b, t = ids.shape
        x = self.tok(ids) + self.pos[:, :t]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), diagonal=1)
        d = x.shape[-1] // self.heads
        for ln, attn, out, mln, mlp in zip(self.attn_ln, self.attn, self.out, self.mlp_ln, self.mlp):
            q, k, v = attn(ln(x)).chunk(3, dim=-1)
            q, k, v = (z.reshape(b, t, self.heads, d).transpose(1, 2) for z in (q, k, v))
            s = (q @ k.transpose(-1, -2)) * d ** -0.5
            s = s.masked_fill(causal, float("-inf"))
            y = F.dropout(s.softmax(-1), 0.1, self.training) @ v
            x = x + out(y.transpose(1, 2).reshape(b, t, -1))
            x = x + mlp(mln(x))
        return self.head(self.ln(x))


class EncDec(nn.Module):
    """Encoder-decoder with two inputs (source features, target token ids):
    nn.Transformer-style layers written with nn.MultiheadAttention."""

    def __init__(self, feat=12, vocab=50, dim=32, heads=4):
        super().__init__()
        self.src = nn.Linear(feat, dim)
        self.tgt = nn.Embedding(vocab, dim)
        self.enc = nn.TransformerEncoderLayer(dim, heads, 2 * dim, 0.0, batch_first=True)
        self.self_attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.cross = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln1, self.ln2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab)

    def forward(self, src, tgt):
        mem = self.enc(self.src(src))
        y = self.tgt(tgt)
        t = y.shape[1]
        mask = torch.full((t, t), float("-inf")).triu(1)
        y = self.ln1(y + self.self_attn(y, y, y, attn_mask=mask, need_weights=False)[0])
        y = self.ln2(y + self.cross(y, mem, mem, need_weights=False)[0])
        return self.head(y)


class ResBlockT(nn.Module):
    def __init__(self, i, o, tdim):
        super().__init__()
        self.n1, self.c1 = nn.GroupNorm(4, i), nn.Conv2d(i, o, 3, padding=1)
        self.t = nn.Linear(tdim, o)
        self.n2, self.c2 = nn.GroupNorm(4, o), nn.Conv2d(o, o, 3, padding=1)
        self.skip = nn.Conv2d(i, o, 1) if i != o else nn.Identity()

    def forward(self, x, temb):
        h = self.c1(F.silu(self.n1(x)))
        h = h + self.t(F.silu(temb))[:, :, None, None]
        h = self.c2(F.silu(self.n2(h)))
        return h + self.skip(x)


class DiffusionUNet(nn.Module):
    """A diffusion-style UNet: timestep (float, one per sample) through a
    sinusoidal embedding and an MLP, GroupNorm + SiLU residual blocks, average
    pooling down, F.interpolate up, cat skips."""

    def __init__(self, ch=16, tdim=32):
        super().__init__()
        self.tdim = tdim
        self.tmlp = nn.Sequential(nn.Linear(tdim, tdim), nn.SiLU(), nn.Linear(tdim, tdim))
        self.inp = nn.Conv2d(3, ch, 3, padding=1)
        self.d1 = ResBlockT(ch, ch, tdim)
        self.d2 = ResBlockT(ch, 2 * ch, tdim)
        self.mid = ResBlockT(2 * ch, 2 * ch, tdim)
        self.u2 = ResBlockT(4 * ch, ch, tdim)
        self.u1 = ResBlockT(2 * ch, ch, tdim)
        self.out = nn.Sequential(nn.GroupNorm(4, ch), nn.SiLU(), nn.Conv2d(ch, 3, 3, padding=1))

    def forward(self, x, t):
        half = self.tdim // 2
        freqs = torch.exp(-math.log(10000.0) * torch.arange(half, dtype=x.dtype) / half)
        a = t[:, None] * freqs[None]
        temb = self.tmlp(torch.cat([a.sin(), a.cos()], 1))
        h0 = self.inp(x)
        h1 = self.d1(h0, temb)
        h2 = self.d2(F.avg_pool2d(h1, 2), temb)
        m = self.mid(F.avg_pool2d(h2, 2), temb)
        u = self.u2(torch.cat([F.interpolate(m, scale_factor=2.0, mode="nearest"), h2], 1), temb)
        u = self.u1(torch.cat([F.interpolate(u, scale_factor=2.0, mode="bilinear", align_corners=False), h1], 1),
                    temb)
        return self.out(u)


class Audio1d(nn.Module):
    """A Conv1d audio model: strided conv front end on a raw waveform, Conv1d +
    BatchNorm1d + ReLU stages, max pooling, a GRU-free temporal mean, head."""

    def __init__(self, ch=16, classes=10):
        super().__init__()
        self.front = nn.Conv1d(1, ch, 16, stride=4, padding=6)
        layers, c = [], ch
        for o in (ch, 2 * ch, 2 * ch):
            layers += [nn.Conv1d(c, o, 5, padding=2), nn.BatchNorm1d(o), nn.ReLU(inplace=True), nn.MaxPool1d(2)]
            c = o
        self.body = nn.Sequential(*layers)
        self.head = nn.Linear(c, classes)

    def forward(self, wav):
        return self.head(self.body(self.front(wav)).mean(-1))


class MoE(nn.Module):
    """A mixture-of-experts layer: a router, top-2 routing (topk + softmax over
    the kept scores), each token's hidden state gathered per expert with
    index_select, the experts' outputs weighted and scatter_add-ed back;
    gather of the routing weights."""

    def __init__(self, dim=16, experts=4, k=2):
        super().__init__()
        self.inp = nn.Linear(dim, dim)
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
                                     for _ in range(experts))
        self.k = k
        self.head = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.inp(x).reshape(-1, x.shape[-1])                    # tokens x dim
        scores, chosen = self.router(h).topk(self.k, dim=-1)       # tokens x k
        weights = scores.softmax(-1)
        out = torch.zeros_like(h)
        flat = chosen.reshape(-1)
        tok = torch.arange(h.shape[0]).repeat_interleave(self.k)
        for e, expert in enumerate(self.experts):
            sel = (flat == e).nonzero().squeeze(1)   # traced: the example's routing is fixed
            idx = tok.index_select(0, sel)
            w = weights.reshape(-1).gather(0, sel)
            y = expert(h.index_select(0, idx)) * w[:, None]
            out = out.scatter_add(0, idx[:, None].expand(-1, h.shape[1]), y)
        return self.head(out).reshape(x.shape)


class MoEDense(nn.Module):
    """Mixture of experts without data-dependent shapes: every expert runs
    on every token; top-k routing weights are scattered into a dense gate
    (topk, scatter, gather), experts stacked and mixed with einsum."""

    def __init__(self, dim=16, experts=4, k=2):
        super().__init__()
        self.router = nn.Linear(dim, experts)
        self.experts = nn.ModuleList(nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
                                     for _ in range(experts))
        self.k = k
        self.head = nn.Linear(dim, dim)

    def forward(self, x):
        logits = self.router(x)
        top, idx = logits.topk(self.k, dim=-1)
        gate = torch.zeros_like(logits).scatter(-1, idx, top.softmax(-1))
        picked = gate.gather(-1, idx)                               # = the kept weights
        ys = torch.stack([e(x) for e in self.experts], -1)         # b t d E
        y = torch.einsum("btde,bte->btd", ys, gate)
        return self.head(y) + picked.sum(-1, keepdim=True)


class OpsMix(nn.Module):
    """A grab bag: einsum, cumsum, F.pad, pixel_shuffle, roll, flip, chunk,
    stack, amax, where, clamp, repeat, unfold-free."""

    def __init__(self, ch=8):
        super().__init__()
        self.c1 = nn.Conv2d(3, 4 * ch, 3, padding=1)
        self.c2 = nn.Conv2d(ch, ch, 3)
        self.w = nn.Parameter(torch.randn(ch, ch) * 0.1)

    def forward(self, x):
        y = F.pixel_shuffle(self.c1(x), 2)                           # b ch 2h 2w
        y = self.c2(F.pad(y, (1, 1, 1, 1), mode="reflect"))
        a, b = y.chunk(2, dim=1)
        z = torch.stack([a.roll(1, dims=2), b.flip(3)], 0).sum(0)
        z = torch.cat([z, z.cumsum(-1) * 0.01], 1)
        e = torch.einsum("bchw,cd->bdhw", z, self.w)
        e = torch.where(e > 0, e, 0.1 * e).clamp(-5, 5)
        return e.amax(dim=(2, 3)) + e.mean(dim=(2, 3)).repeat(1, 1)


class CrossEntropyInside(nn.Module):
    """An MLP classifier returning its own loss: cross_entropy (with label
    smoothing) against an int64 target input, plus the logits."""

    def __init__(self, dim=32, classes=10):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 64), nn.ReLU(), nn.Dropout(0.1), nn.Linear(64, classes))

    def forward(self, x, target):
        logits = self.net(x)
        return F.cross_entropy(logits, target, label_smoothing=0.1)


class InplaceOps(nn.Module):
    """In-place ops users write: `x += y` on an activation, `x[:, 0] = ...`
    (index_put_ / copy_ into a slice), `x *= 2`, masked_fill_."""

    def __init__(self, dim=16):
        super().__init__()
        self.a = nn.Linear(dim, dim)
        self.b = nn.Linear(dim, dim)
        self.c = nn.Linear(dim, dim)

    def forward(self, x):
        h = self.a(x)
        h += self.b(x)
        h[:, 0] = self.c(x)[:, 1] * 0.5
        h *= 2.0
        g = h * 0.5                             # mul by a number saves nothing: masked_fill_ may write it
        g.masked_fill_(g > 0.9, 0.0)
        g = torch.tanh(g)
        return self.c(g)


class FrozenBackbone(nn.Module):
    """Fine-tuning a head: a conv backbone whose parameters do not require
    grad (requires_grad_(False)), then a trainable head."""

    def __init__(self, ch=8, classes=10):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, ch, 3, padding=1), nn.BatchNorm2d(ch), nn.ReLU(),
                                      nn.Conv2d(ch, 2 * ch, 3, stride=2, padding=1), nn.ReLU())
        self.backbone.requires_grad_(False)
        self.head = nn.Sequential(nn.Conv2d(2 * ch, 2 * ch, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
                                  nn.Flatten(), nn.Linear(2 * ch, classes))

    def forward(self, x):
        return self.head(self.backbone(x))


class Buffers(nn.Module):
    """Buffers read in forward: a fixed normalisation (mean/std buffers), a
    sinusoidal position table buffer, a learnt scale."""

    def __init__(self, dim=16, seq=8):
        super().__init__()
        self.register_buffer("mean", torch.linspace(-0.1, 0.1, dim))
        self.register_buffer("std", torch.linspace(0.9, 1.1, dim))
        pos = torch.arange(seq)[:, None] / (10000 ** (torch.arange(dim)[None] / dim))
        self.register_buffer("table", torch.where(torch.arange(dim) % 2 == 0, pos.sin(), pos.cos()))
        self.l1 = nn.Linear(dim, dim)
        self.l2 = nn.Linear(dim, dim)

    def forward(self, x):
        x = (x - self.mean) / self.std + self.table
        return self.l2(torch.relu(self.l1(x)))


class MixedInputs(nn.Module):
    """int64 category ids and float features together: an embedding bag-free
    sum of embeddings concatenated with the features, an MLP."""

    def __init__(self, cats=20, dim=8, feat=6):
        super().__init__()
        self.emb = nn.Embedding(cats, dim)
        self.mlp = nn.Sequential(nn.Linear(2 * dim + feat, 32), nn.ReLU(), nn.Linear(32, 1))

    def forward(self, ids, feats):
        e = self.emb(ids)                                          # b 2 dim
        return self.mlp(torch.cat([e.flatten(1), feats], 1))


class Bf16Mlp(nn.Module):
    """An MLP in bfloat16 (parameters and input), LayerNorm and GELU."""

    def __init__(self, dim=32):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, 64), nn.LayerNorm(64), nn.GELU(), nn.Linear(64, dim))

    def forward(self, x):
        return self.net(x)


class SdpaCausal(nn.Module):
    """F.scaled_dot_product_attention(is_causal=True) with a bool key-padding
    mask input, nn.MultiheadAttention returning its averaged weights
    (need_weights=True: two outputs, both in the loss)."""

    def __init__(self, dim=32, heads=4):
        super().__init__()
        self.qkv = nn.Linear(dim, 3 * dim)
        self.heads = heads
        self.mha = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.out = nn.Linear(dim, dim)

    def forward(self, x, pad):
        b, t, c = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        z, w = self.mha(y, y, y, key_padding_mask=pad, need_weights=True)
        return self.out(z), w


class StopGradNoise(nn.Module):
    """Idioms of self-supervised and diffusion training: a target branch
    through .detach() (stop-gradient), noise drawn inside forward
    (randn_like), a loss-like mse between branches, a no-grad-free EMA-free
    projector."""

    def __init__(self, dim=32):
        super().__init__()
        self.enc = nn.Sequential(nn.Linear(dim, dim), nn.ReLU(), nn.Linear(dim, dim))
        self.pred = nn.Linear(dim, dim)

    def forward(self, x):
        z1 = self.enc(x + 0.1 * torch.randn_like(x))
        z2 = self.enc(x + 0.1 * torch.randn_like(x))
        return F.mse_loss(self.pred(z1), z2.detach()) + F.mse_loss(self.pred(z2), z1.detach())


class FNet(nn.Module):
    """FNet-style token mixing: the real part of a 2-d FFT over (sequence,
    hidden) (complex activations inside the model), LayerNorm, MLP."""

    def __init__(self, dim=32, layers=2):
        super().__init__()
        self.ln1 = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(dim) for _ in range(layers))
        self.mlp = nn.ModuleList(nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
                                 for _ in range(layers))

    def forward(self, x):
        for ln1, ln2, mlp in zip(self.ln1, self.ln2, self.mlp):
            x = ln1(x + torch.fft.fft2(x).real)
            x = ln2(x + mlp(x))
        return x


class EmbBag(nn.Module):
    """A recommender-style model: nn.EmbeddingBag (mean) over int64 ids with
    offsets, a dense branch, dot interaction (bmm), sigmoid output."""

    def __init__(self, n=50, dim=8, feat=5):
        super().__init__()
        self.bag = nn.EmbeddingBag(n, dim, mode="mean")
        self.dense = nn.Linear(feat, dim)
        self.top = nn.Linear(dim + 1, 1)

    def forward(self, ids, offsets, feats):
        e = self.bag(ids, offsets)
        d = self.dense(feats)
        inter = torch.bmm(e[:, None, :], d[:, :, None]).squeeze(-1)
        return torch.sigmoid(self.top(torch.cat([d, inter], 1)))


class PosBiasMlp(nn.Module):
    """Swin V2's continuous position bias: an MLP with an in-place ReLU over a buffer (no input
    dependency; a Linear on a 4-d input returns a view of addmm's result, so the `relu_` is an in-place
    op on a view), a sigmoid-scaled bias added to attention-like scores."""

    def __init__(self, heads=4, n=5, dim=16):
        super().__init__()
        self.register_buffer("table", torch.linspace(-1, 1, n * n * 2).reshape(1, n, n, 2))
        self.cpb = nn.Sequential(nn.Linear(2, 64), nn.ReLU(inplace=True), nn.Linear(64, heads, bias=False))
        self.q = nn.Linear(dim, dim)
        self.o = nn.Linear(dim, dim)
        self.heads, self.n = heads, n

    def forward(self, x):  # x: B, n*n, dim
        bias = 16 * torch.sigmoid(self.cpb(self.table).view(-1, self.heads).t())
        h = self.q(x).view(x.shape[0], self.n * self.n, self.heads, -1).transpose(1, 2)
        h = h * (1 + bias[None, :, :, None])
        return self.o(h.transpose(1, 2).reshape(x.shape[0], self.n * self.n, -1))


class Pool1dIndices(nn.Module):
    """adaptive_max_pool1d: two outputs (values, int64 indices), both squeezed views of the 2-d op's;
    the backward reads the indices, which nothing in forward reads."""

    def __init__(self):
        super().__init__()
        self.c = nn.Conv1d(8, 32, 5, padding=2)
        self.o = nn.Linear(32, 6)

    def forward(self, x):  # B, 8, T
        y = F.hardswish(self.c(x))
        return self.o(F.adaptive_max_pool1d(y, 1).squeeze(-1))



class ViewWritesReadAgain(nn.Module):
    """In-place writes on activations whose original is read before and again after them, as PyTorch
    allows: `h[:, 1:] += 0.5 * h[:, :-1].detach()` (a slice written after another slice was read,
    then `h` read whole), `u.mul_(2)` after `relu(u)` read it, a write through transpose + narrow
    views after a `cat` read the data, and `h[:, 0] = 0` on the result (read again by the head)."""

    def __init__(self, dim=32):
        super().__init__()
        self.a = nn.Linear(dim, dim)
        self.b = nn.Linear(dim, dim)
        self.c = nn.Linear(dim, dim)
        self.o = nn.Linear(3 * dim, dim)

    def forward(self, x):  # B, L, dim
        h = self.a(x)
        h[:, 1:] += 0.5 * h[:, :-1].detach()
        h = torch.tanh(h)
        u = self.b(h)
        r = torch.relu(u)
        u.mul_(2)
        v = self.c(u + r)
        both = torch.cat([v, r], -1)
        v.transpose(1, 2).narrow(1, 0, 8).add_(1.0)
        y = torch.cat([both, v], -1)
        y[:, 0] = 0
        return self.o(y)

class ZerosWritten(nn.Module):
    """Data written into a tensor made by a factory from sizes only: a Fourier layer's modes
    (`out = torch.zeros(B, C, H, W // 2 + 1, dtype=xf.dtype)`, two corner slices set to a complex
    einsum with a view_as_complex weight, irfft2 with s=), `new_zeros` with a column block set to a
    tanh and another added in place, and a float `torch.zeros` written by a LeakyReLU's result;
    3x3 convolutions after the Fourier layer, so that a schedule at half the peak recomputes."""

    def __init__(self, ch=8, modes=3):
        super().__init__()
        self.lift = nn.Conv2d(3, ch, 1)
        self.w1 = nn.Parameter(0.1 * torch.randn(ch, ch, modes, modes, 2))
        self.w2 = nn.Parameter(0.1 * torch.randn(ch, ch, modes, modes, 2))
        self.pw = nn.Conv2d(ch, ch, 1)
        self.convs = nn.Sequential(*[nn.Sequential(nn.Conv2d(ch, ch, 3, padding=1), nn.GELU()) for _ in range(4)])
        self.a = nn.Linear(ch, 16)
        self.o = nn.Linear(32, 5)
        self.m = modes

    def forward(self, x):  # B, 3, H, W
        h = self.lift(x)
        B, C, H, W = h.shape
        xf = torch.fft.rfft2(h)
        out = torch.zeros(B, C, H, W // 2 + 1, dtype=xf.dtype, device=x.device)
        m = self.m
        out[:, :, :m, :m] = torch.einsum("bixy,ioxy->boxy", xf[:, :, :m, :m], torch.view_as_complex(self.w1))
        out[:, :, -m:, :m] = torch.einsum("bixy,ioxy->boxy", xf[:, :, -m:, :m], torch.view_as_complex(self.w2))
        h = F.gelu(torch.fft.irfft2(out, s=(H, W)) + self.pw(h))
        t = self.a(self.convs(h).mean((2, 3)))            # B, 16
        z = t.new_zeros(B, 32)
        z[:, :16] = torch.tanh(t)
        z[:, 8:24] += t
        w = torch.zeros(B, 32)
        w[:, 4:] = F.leaky_relu(z[:, 4:], 0.1)
        return self.o(w)


class ExpandedParams(nn.Module):
    """Parameters expanded to the batch and read by several ops: a Perceiver's latent array
    (`latent.unsqueeze(0).expand(B, -1, -1)`, normalised for a cross-attention query and added
    back), and DETR-style query positions added before each of two layers.  The plain step sums
    the readers' gradients before the expand's backward sums over the batch."""

    def __init__(self, dim=32, latents=8):
        super().__init__()
        self.latent = nn.Parameter(0.02 * torch.randn(latents, dim))
        self.qpos = nn.Parameter(0.02 * torch.randn(latents, dim))
        self.ln_q, self.ln_x = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.q, self.kv = nn.Linear(dim, dim), nn.Linear(dim, 2 * dim)
        self.layers = nn.ModuleList([nn.Linear(dim, dim) for _ in range(2)])
        self.head = nn.Linear(dim, 5)

    def forward(self, x):  # B, L, dim
        B = x.shape[0]
        lat = self.latent.unsqueeze(0).expand(B, -1, -1)
        pos = self.qpos.unsqueeze(0).expand(B, -1, -1)
        k, v = self.kv(self.ln_x(x)).chunk(2, -1)
        h = lat + F.scaled_dot_product_attention(self.q(self.ln_q(lat)), k, v)
        for lin in self.layers:
            h = h + torch.tanh(lin(h + pos))
        return self.head(h.mean(1))


SMALL = {
    "bert": "BERT-like encoder: 3 embeddings, int64 attention mask, LayerNorm, GELU, dropout; (states, pooled)",
    "gpt_tied": "GPT-like decoder, LM head tied to the embedding, triu + masked_fill causal mask",
    "encdec": "encoder-decoder with two inputs (float source, int64 target ids), MultiheadAttention",
    "diffusion_unet": "diffusion UNet: GroupNorm, SiLU, sinusoidal timestep input, interpolate, cat skips",
    "audio1d": "Conv1d audio model on a raw waveform, BatchNorm1d, MaxPool1d",
    "moe": "mixture of experts with index_select / gather / scatter_add dispatch (nonzero: refused)",
    "moe_dense": "mixture of experts, dense: topk routing, scatter, gather, stack, einsum",
    "ops_mix": "einsum, cumsum, reflect pad, pixel_shuffle, roll, flip, chunk, stack, where, amax",
    "ce_inside": "cross_entropy (label smoothing) computed inside the model against an int64 target input",
    "inplace_ops": "x += y, x[:, 0] = ..., x *= 2, masked_fill_ on activations",
    "frozen_backbone": "backbone with requires_grad=False parameters, trainable head",
    "buffers": "buffers (normalisation, position table) read in forward",
    "mixed_inputs": "int64 category ids + float features",
    "bf16_mlp": "MLP in bfloat16",
    "float64_mlp": "the bfloat16 MLP in float64",
    "sdpa_mha": "scaled_dot_product_attention(is_causal=True), bool padding-mask input, MHA returning its weights",
    "stopgrad_noise": "detach() target branch, randn_like noise in forward, mse_loss inside",
    "fnet": "FNet: real part of torch.fft.fft2 (complex activations), LayerNorm, MLP",
    "embbag": "EmbeddingBag (ids + offsets), bmm interaction, sigmoid",
    "pos_bias_mlp": "Swin V2's position-bias MLP: in-place ReLU on a view (Linear on a 4-d buffer), no input dependency",
    "pool1d_indices": "Conv1d, hardswish, adaptive_max_pool1d (int64 indices saved as a view of the op's own)",
    "view_writes": "in-place writes (slices, views) on activations read before and again after them",
    "expanded_params": "parameters expanded to the batch, each read by several ops (Perceiver latents, DETR queries)",
    "zeros_written": "torch.zeros / new_zeros from sizes, slices written with data (FNO modes, complex einsum)",
}


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    b = args.batch
    img = [common.float_input((b, 3, args.image, args.image), dtype, g)]
    if name in TORCHVISION:
        import torchvision.models as tv
        import torchvision.models.segmentation as seg
        import torchvision.models.video as video
        if name in ("fcn_resnet50", "deeplabv3_mobilenet_v3_large", "lraspp_mobilenet_v3_large"):
            kw = {} if name.startswith("lraspp") else {"aux_loss": True}
            return getattr(seg, name)(weights=None, weights_backbone=None, num_classes=3, **kw), img
        if name == "r3d_18":
            return video.r3d_18(weights=None, num_classes=5), [common.float_input((b, 3, 4, 32, 32), dtype, g)]
        if name == "maxvit_t":
            from torchvision.models.maxvit import MaxVit
            m = MaxVit(input_size=(64, 64), stem_channels=16, partition_size=4, block_channels=[16, 32],
                       block_layers=[1, 1], head_dim=8, stochastic_depth_prob=0.0, num_classes=5)
            return m, [common.float_input((b, 3, 64, 64), dtype, g)]
        if name == "vit_b_16":
            m = tv.VisionTransformer(image_size=32, patch_size=16, num_layers=2, num_heads=4, hidden_dim=64,
                                     mlp_dim=128, num_classes=5)
            return m, [common.float_input((b, 3, 32, 32), dtype, g)]
    if name == "bert":
        ids = common.token_ids((b, 16), 100, g)
        types = common.token_ids((b, 16), 2, g)
        mask = torch.ones(b, 16, dtype=torch.int64)
        mask[:, 12:] = 0
        return BertLike(), [ids, types, mask]
    if name == "gpt_tied":
        return GptTied(), [common.token_ids((b, 16), 100, g)]
    if name == "encdec":
        return EncDec(), [common.float_input((b, 10, 12), dtype, g), common.token_ids((b, 8), 50, g)]
    if name == "diffusion_unet":
        return DiffusionUNet(), [img[0], torch.rand(b, generator=g, dtype=torch.float64).to(dtype) * 1000]
    if name == "audio1d":
        return Audio1d(), [common.float_input((b, 1, 1024), dtype, g)]
    if name == "moe":
        return MoE(), [common.float_input((b, 8, 16), dtype, g)]
    if name == "moe_dense":
        return MoEDense(), [common.float_input((b, 8, 16), dtype, g)]
    if name == "ops_mix":
        return OpsMix(), [common.float_input((b, 3, 8, 8), dtype, g)]
    if name == "ce_inside":
        return CrossEntropyInside(), [common.float_input((b * 4, 32), dtype, g), common.token_ids((b * 4,), 10, g)]
    if name == "inplace_ops":
        return InplaceOps(), [common.float_input((b * 2, 16), dtype, g)]
    if name == "frozen_backbone":
        return FrozenBackbone(), img
    if name == "buffers":
        return Buffers(), [common.float_input((b, 8, 16), dtype, g)]
    if name == "mixed_inputs":
        return MixedInputs(), [common.token_ids((b * 2, 2), 20, g), common.float_input((b * 2, 6), dtype, g)]
    if name == "bf16_mlp":
        return Bf16Mlp().to(torch.bfloat16), [common.float_input((b * 2, 32), torch.bfloat16, g)]
    if name == "float64_mlp":
        return Bf16Mlp().to(torch.float64), [common.float_input((b * 2, 32), torch.float64, g)]
    if name == "sdpa_mha":
        pad = torch.zeros(b, 8, dtype=torch.bool)
        pad[:, 6:] = True
        return SdpaCausal(), [common.float_input((b, 8, 32), dtype, g), pad]
    if name == "stopgrad_noise":
        return StopGradNoise(), [common.float_input((b * 2, 32), dtype, g)]
    if name == "fnet":
        return FNet(), [common.float_input((b, 8, 32), dtype, g)]
    if name == "embbag":
        ids = common.token_ids((b * 3,), 50, g)
        offsets = torch.arange(0, b * 3, 3, dtype=torch.int64)
        return EmbBag(), [ids, offsets, common.float_input((b, 5), dtype, g)]
    if name == "pos_bias_mlp":
        return PosBiasMlp(), [common.float_input((b, 25, 16), dtype, g)]
    if name == "view_writes":
        return ViewWritesReadAgain(), [common.float_input((b, 12, 32), dtype, g)]
    if name == "expanded_params":
        return ExpandedParams(), [common.float_input((b, 10, 32), dtype, g)]
    if name == "zeros_written":
        return ZerosWritten(), [common.float_input((b, 3, args.image, args.image), dtype, g)]
    if name == "pool1d_indices":
        return Pool1dIndices(), [common.float_input((b, 8, 200), dtype, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "coverage.pt", list(TORCHVISION) + list(SMALL), build,
                                 image=32, batch=2, keeps_dtype=("bf16_mlp", "float64_mlp"))


if __name__ == "__main__":
    sys.exit(main())
