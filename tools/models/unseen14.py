#!/usr/bin/env python3
"""unseen14.py — a fourteenth set of models nobody tuned rkmate for
(after tools/models/unseen.py ... unseen13.py), all small and written as users
of torch 2.x write them today.  Each has idioms the other sets do not:

A gated-MLP decoder-only LM (LLaMA-style, tiny): a token embedding, blocks of
hand-written RMSNorm (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
* w), a fused qkv projection, rotary position embeddings applied by slicing
halves and torch.cat((-x2, x1), -1) with cos / sin buffers, 
F.scaled_dot_product_attention(is_causal=True), a fused gate/up projection
split by slicing (gate, up = h[..., :d], h[..., d:]) and F.silu(gate) * up,
a final RMSNorm, a head tied to the embedding (F.linear(x, self.emb.weight))
and a next-token cross-entropy with the label shift logits[:, :-1] /
tokens[:, 1:] (reshape(-1, V)).

A GLU convolutional LM (Dauphin et al., gated convolutional networks): an
embedding transposed to (B, C, T), causal Conv1d by F.pad(x, (k - 1, 0)) on
the left, F.glu(dim=1) on the doubled channels, residual adds, every conv
under torch.nn.utils.parametrizations.weight_norm (the weight recomputed from
parametrizations.weight.original0 / original1 in the forward), and a plain
cross-entropy over the vocabulary (no adaptive softmax).

A VQ-VAE-2 style vector quantizer: a small conv encoder, distances
x.pow(2).sum(-1, keepdim=True) - 2 * x @ e.t() + e.pow(2).sum(-1), argmin,
F.embedding of the codes, the straight-through estimator x + (q - x).detach(),
the codebook and commitment losses (F.mse_loss(q, x.detach()) and 0.25 *
F.mse_loss(q.detach(), x)), the perplexity from F.one_hot(codes).float()
.mean(0) (exp(-sum p log(p + 1e-10)), added with weight 0 after detach so it
is computed in the step), a conv decoder and an MSE reconstruction.

A ResNet with mixup inside the forward: a permutation index and lam are
inputs; x_mixed = lam * x + (1 - lam) * x[perm], the loss lam * CE(out, y) +
(1 - lam) * CE(out, y[perm]) with label_smoothing=0.1 and a trailing .sum()
on the 0-dim loss (a no-op that DataParallel-era code keeps; it makes the
chain's last block one node), BasicBlocks with
torchvision.ops.StochasticDepth(p, "row") on the residual branch.

A 2-D U-Net with squeeze-excitation: GroupNorm + SiLU double convs, SE
(F.adaptive_avg_pool2d(x, 1), two 1x1 convs, sigmoid, x * s), max-pool
downsampling, decoder F.interpolate(scale_factor=2, mode="nearest") and
torch.cat([up, skip], dim=1), and a Dice + BCE-with-logits loss on a binary
mask (soft Dice from torch.sigmoid, sums over dims (2, 3)).

A Bahdanau-attention GRU seq2seq: an embedding, a bidirectional nn.GRU
encoder (batch_first), padding from source lengths (a bool mask input), a
decoder unrolled with nn.GRUCell over the target steps with teacher forcing,
additive attention (v(tanh(W1 h[:, None] + W2 enc)).squeeze(-1),
masked_fill(pad, float("-inf")), softmax over the source, torch.bmm of the
weights with the encoder outputs), cat of the context and the embedded
target, torch.stack of the step logits on dim 1 and a cross-entropy with
ignore_index=0 on padded targets.

A PointNet segmentation network with T-Nets: an input T-Net (3x3) and a
feature T-Net (64x64) each predicting a matrix with an identity added from a
torch.eye(k).flatten() buffer, applied by torch.bmm on x.transpose(2, 1);
Conv1d(k=1) + BatchNorm1d layers, the global feature
torch.max(x, 2, keepdim=True)[0] expanded (.expand(-1, -1, N)) and cat-ed
with the per-point features, a per-point segmentation head,
F.log_softmax + F.nll_loss, and the orthogonality regulariser
torch.linalg.norm(I - A @ A.transpose(2, 1), dim=(1, 2)).mean() * 0.001.

A tiny NeRF: frequency positional encoding torch.sin / torch.cos of
x[..., None] * freqs (a buffer of 2 ** k * pi) flattened and cat-ed with x,
for points and view directions; an 8-layer MLP with a skip cat of the input
encoding at layer 4, a density head (ReLU) and an rgb head (sigmoid) fed by
a feature layer and the encoded directions; volume rendering: deltas from
z_vals[..., 1:] - z_vals[..., :-1] with a 1e10 last delta,
alpha = 1 - exp(-sigma * delta), transmittance by torch.cumprod of
(1 - alpha + 1e-10) made exclusive by torch.cat([ones, T[..., :-1]], -1),
weights summed into rgb and depth, an MSE on the rgb.

Every model reads a model input late in the step (labels, a mask, a
permutation, padding, ray depths; vq_codebook its image in the reconstruction
loss), so its chain is one block
(rkmate cuts blocks only where no model input is read later), two for
mixup_resnet.  No model needed simplifying for the exporter.

Exported like the zoo (tools/models/common.export), with the zoo's options,
so that `tools/bench/zoo.py --models-script tools/models/unseen14.py` runs
them through the same bench.

--list prints the names.  Sizes are small by default (--image 96, --batch 4).
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


# ----------------------------------------------------------------------------- gated-MLP LM

class RMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(d))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    x1, x2 = x[..., :x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, d, heads, hidden):
        super().__init__()
        self.h, self.hidden = heads, hidden
        self.n1, self.n2 = RMSNorm(d), RMSNorm(d)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.gate_up = nn.Linear(d, 2 * hidden, bias=False)
        self.down = nn.Linear(hidden, d, bias=False)

    def forward(self, x, cos, sin):
        B, T, D = x.shape
        q, k, v = self.qkv(self.n1(x)).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4).unbind(0)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(B, T, D))
        h = self.gate_up(self.n2(x))
        gate, up = h[..., :self.hidden], h[..., self.hidden:]
        return x + self.down(F.silu(gate) * up)


class GatedMLPLM(nn.Module):
    def __init__(self, vocab=512, d=128, heads=4, layers=4, seq=128):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        nn.init.normal_(self.emb.weight, std=0.02)
        self.blocks = nn.ModuleList([LlamaBlock(d, heads, 4 * d * 2 // 3 // 8 * 8) for _ in range(layers)])
        self.norm = RMSNorm(d)
        hd = d // heads
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        f = torch.outer(torch.arange(seq, dtype=torch.float32), inv)
        emb = torch.cat((f, f), -1)
        self.register_buffer("cos", emb.cos()[None, None], persistent=False)
        self.register_buffer("sin", emb.sin()[None, None], persistent=False)

    def forward(self, tokens):
        T = tokens.shape[1]
        x = self.emb(tokens)
        cos, sin = self.cos[:, :, :T].to(x.dtype), self.sin[:, :, :T].to(x.dtype)
        for b in self.blocks:
            x = b(x, cos, sin)
        logits = F.linear(self.norm(x), self.emb.weight)
        return F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), tokens[:, 1:].reshape(-1))


# ----------------------------------------------------------------------------- GLU conv LM

class GLUBlock(nn.Module):
    def __init__(self, c, k):
        super().__init__()
        self.k = k
        self.conv = nn.utils.parametrizations.weight_norm(nn.Conv1d(c, 2 * c, k))

    def forward(self, x):
        return x + F.glu(self.conv(F.pad(x, (self.k - 1, 0))), dim=1)


class GLUConvLM(nn.Module):
    def __init__(self, vocab=512, c=128, layers=6, k=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, c)
        self.blocks = nn.Sequential(*[GLUBlock(c, k) for _ in range(layers)])
        self.out = nn.utils.parametrizations.weight_norm(nn.Conv1d(c, vocab, 1))

    def forward(self, tokens, targets):
        x = self.emb(tokens).transpose(1, 2)
        logits = self.out(self.blocks(x))
        return F.cross_entropy(logits, targets)


# ----------------------------------------------------------------------------- VQ

class VectorQuantizer(nn.Module):
    def __init__(self, n=128, d=32, beta=0.25):
        super().__init__()
        self.beta = beta
        self.embedding = nn.Embedding(n, d)
        self.embedding.weight.data.uniform_(-1.0 / n, 1.0 / n)

    def forward(self, z):
        B, C, H, W = z.shape
        x = z.permute(0, 2, 3, 1).reshape(-1, C)
        e = self.embedding.weight
        d = x.pow(2).sum(-1, keepdim=True) - 2 * x @ e.t() + e.pow(2).sum(-1)
        codes = torch.argmin(d, dim=1)
        q = F.embedding(codes, e)
        loss = F.mse_loss(q, x.detach()) + self.beta * F.mse_loss(q.detach(), x)
        q = x + (q - x).detach()
        p = F.one_hot(codes, e.shape[0]).float().mean(0)
        perplexity = torch.exp(-torch.sum(p * torch.log(p + 1e-10)))
        return q.view(B, H, W, C).permute(0, 3, 1, 2).contiguous(), loss, perplexity


class VQVAE(nn.Module):
    def __init__(self, c=64, d=32):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, c, 4, 2, 1), nn.ReLU(), nn.Conv2d(c, c, 4, 2, 1), nn.ReLU(),
                                 nn.Conv2d(c, d, 3, 1, 1))
        self.vq = VectorQuantizer(128, d)
        self.dec = nn.Sequential(nn.Conv2d(d, c, 3, 1, 1), nn.ReLU(), nn.ConvTranspose2d(c, c, 4, 2, 1), nn.ReLU(),
                                 nn.ConvTranspose2d(c, 3, 4, 2, 1))

    def forward(self, x):
        q, vq_loss, perplexity = self.vq(self.enc(x))
        return F.mse_loss(self.dec(q), x) + vq_loss + 0.0 * perplexity.detach()


# ----------------------------------------------------------------------------- mixup ResNet

class BasicBlockSD(nn.Module):
    def __init__(self, cin, cout, stride, p):
        super().__init__()
        self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.b1 = nn.BatchNorm2d(cout)
        self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.b2 = nn.BatchNorm2d(cout)
        self.sd = __import__("torchvision").ops.StochasticDepth(p, "row")
        self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                      if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        y = self.b2(self.c2(F.relu(self.b1(self.c1(x)))))
        return F.relu(self.short(x) + self.sd(y))


class MixupResNet(nn.Module):
    def __init__(self, classes=10, w=32):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, w, 3, 1, 1, bias=False), nn.BatchNorm2d(w), nn.ReLU(inplace=True))
        cfg = [(w, w, 1), (w, w, 1), (w, 2 * w, 2), (2 * w, 2 * w, 1), (2 * w, 4 * w, 2), (4 * w, 4 * w, 1)]
        self.layers = nn.Sequential(*[BasicBlockSD(a, b, s, 0.2 * i / len(cfg)) for i, (a, b, s) in enumerate(cfg)])
        self.fc = nn.Linear(4 * w, classes)

    def forward(self, x, y, perm, lam):
        x = lam * x + (1 - lam) * x[perm]
        out = self.fc(torch.flatten(F.adaptive_avg_pool2d(self.layers(self.stem(x)), 1), 1))
        return (lam * F.cross_entropy(out, y, label_smoothing=0.1)
                + (1 - lam) * F.cross_entropy(out, y[perm], label_smoothing=0.1)).sum()


# ----------------------------------------------------------------------------- SE U-Net

class SE(nn.Module):
    def __init__(self, c, r=4):
        super().__init__()
        self.fc1 = nn.Conv2d(c, c // r, 1)
        self.fc2 = nn.Conv2d(c // r, c, 1)

    def forward(self, x):
        s = F.adaptive_avg_pool2d(x, 1)
        return x * torch.sigmoid(self.fc2(F.relu(self.fc1(s))))


class DoubleConv(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(cin, cout, 3, 1, 1), nn.GroupNorm(8, cout), nn.SiLU(),
                                 nn.Conv2d(cout, cout, 3, 1, 1), nn.GroupNorm(8, cout), nn.SiLU())
        self.se = SE(cout)

    def forward(self, x):
        return self.se(self.net(x))


class SEUNet(nn.Module):
    def __init__(self, c=16):
        super().__init__()
        self.d1, self.d2, self.d3 = DoubleConv(3, c), DoubleConv(c, 2 * c), DoubleConv(2 * c, 4 * c)
        self.mid = DoubleConv(4 * c, 4 * c)
        self.u3, self.u2, self.u1 = DoubleConv(8 * c, 2 * c), DoubleConv(4 * c, c), DoubleConv(2 * c, c)
        self.head = nn.Conv2d(c, 1, 1)

    def forward(self, x, mask):
        s1 = self.d1(x)
        s2 = self.d2(F.max_pool2d(s1, 2))
        s3 = self.d3(F.max_pool2d(s2, 2))
        m = self.mid(F.max_pool2d(s3, 2))
        y = self.u3(torch.cat([F.interpolate(m, scale_factor=2, mode="nearest"), s3], dim=1))
        y = self.u2(torch.cat([F.interpolate(y, scale_factor=2, mode="nearest"), s2], dim=1))
        y = self.u1(torch.cat([F.interpolate(y, scale_factor=2, mode="nearest"), s1], dim=1))
        logits = self.head(y)
        p = torch.sigmoid(logits)
        inter = (p * mask).sum(dim=(2, 3))
        dice = 1 - (2 * inter + 1) / (p.sum(dim=(2, 3)) + mask.sum(dim=(2, 3)) + 1)
        return F.binary_cross_entropy_with_logits(logits, mask) + dice.mean()


# ----------------------------------------------------------------------------- Bahdanau seq2seq

class Seq2SeqAttn(nn.Module):
    def __init__(self, vs=400, vt=400, e=64, h=96):
        super().__init__()
        self.src_emb = nn.Embedding(vs, e, padding_idx=0)
        self.tgt_emb = nn.Embedding(vt, e, padding_idx=0)
        self.enc = nn.GRU(e, h, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * h, h)
        self.W1 = nn.Linear(h, h, bias=False)
        self.W2 = nn.Linear(2 * h, h, bias=False)
        self.v = nn.Linear(h, 1, bias=False)
        self.cell = nn.GRUCell(e + 2 * h, h)
        self.out = nn.Linear(h + 2 * h + e, vt)

    def forward(self, src, src_pad, tgt_in, tgt_out):
        enc, _ = self.enc(self.src_emb(src))                                     # (B, S, 2h)
        keep = (~src_pad).unsqueeze(-1).to(enc.dtype)
        h = torch.tanh(self.bridge((enc * keep).sum(1) / keep.sum(1)))
        enc_proj = self.W2(enc)
        emb = self.tgt_emb(tgt_in)
        logits = []
        for t in range(tgt_in.shape[1]):
            score = self.v(torch.tanh(self.W1(h)[:, None] + enc_proj)).squeeze(-1)
            score = score.masked_fill(src_pad, float("-inf"))
            a = torch.softmax(score, dim=1)
            ctx = torch.bmm(a.unsqueeze(1), enc).squeeze(1)
            h = self.cell(torch.cat([emb[:, t], ctx], -1), h)
            logits.append(self.out(torch.cat([h, ctx, emb[:, t]], -1)))
        logits = torch.stack(logits, dim=1)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=0)


# ----------------------------------------------------------------------------- PointNet seg

class TNet(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k
        self.convs = nn.Sequential(nn.Conv1d(k, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
                                   nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
                                   nn.Conv1d(128, 256, 1), nn.BatchNorm1d(256), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(256, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Linear(128, k * k))
        nn.init.zeros_(self.fc[-1].weight)
        nn.init.zeros_(self.fc[-1].bias)
        self.register_buffer("iden", torch.eye(k).flatten(), persistent=False)

    def forward(self, x):
        x = torch.max(self.convs(x), 2, keepdim=True)[0].flatten(1)
        return (self.fc(x) + self.iden.to(x.dtype)).view(-1, self.k, self.k)


class PointNetSeg(nn.Module):
    def __init__(self, parts=8):
        super().__init__()
        self.stn = TNet(3)
        self.conv1 = nn.Sequential(nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU())
        self.fstn = TNet(64)
        self.conv2 = nn.Sequential(nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
                                   nn.Conv1d(128, 256, 1), nn.BatchNorm1d(256))
        self.seg = nn.Sequential(nn.Conv1d(64 + 256, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
                                 nn.Conv1d(128, 64, 1), nn.BatchNorm1d(64), nn.ReLU(), nn.Conv1d(64, parts, 1))

    def forward(self, pts, labels):
        N = pts.shape[2]
        t = self.stn(pts)
        x = torch.bmm(pts.transpose(2, 1), t).transpose(2, 1)
        x = self.conv1(x)
        tf = self.fstn(x)
        pf = torch.bmm(x.transpose(2, 1), tf).transpose(2, 1)
        g = torch.max(self.conv2(pf), 2, keepdim=True)[0]
        x = torch.cat([pf, g.expand(-1, -1, N)], 1)
        logp = F.log_softmax(self.seg(x), dim=1)
        I = torch.eye(64, dtype=tf.dtype)[None]
        reg = torch.linalg.norm(I - torch.bmm(tf, tf.transpose(2, 1)), dim=(1, 2)).mean()
        return F.nll_loss(logp, labels) + 0.001 * reg


# ----------------------------------------------------------------------------- tiny NeRF

class PosEnc(nn.Module):
    def __init__(self, n):
        super().__init__()
        self.register_buffer("freqs", (2.0 ** torch.arange(n)) * math.pi, persistent=False)

    def forward(self, x):
        xf = x[..., None] * self.freqs.to(x.dtype)
        return torch.cat([x, torch.sin(xf).flatten(-2), torch.cos(xf).flatten(-2)], -1)


class TinyNeRF(nn.Module):
    def __init__(self, w=128, nx=8, nd=4):
        super().__init__()
        self.pe_x, self.pe_d = PosEnc(nx), PosEnc(nd)
        cx, cd = 3 + 6 * nx, 3 + 6 * nd
        self.layers = nn.ModuleList([nn.Linear(cx, w)] + [nn.Linear(w + (cx if i == 4 else 0), w)
                                                          for i in range(1, 8)])
        self.sigma = nn.Linear(w, 1)
        self.feat = nn.Linear(w, w)
        self.rgb = nn.Sequential(nn.Linear(w + cd, w // 2), nn.ReLU(), nn.Linear(w // 2, 3))

    def forward(self, origins, dirs, z_vals, target):
        pts = origins[:, None] + dirs[:, None] * z_vals[..., None]                # (R, S, 3)
        ex = self.pe_x(pts)
        ed = self.pe_d(dirs / dirs.norm(dim=-1, keepdim=True))[:, None].expand(-1, pts.shape[1], -1)
        h = ex
        for i, l in enumerate(self.layers):
            if i == 4:
                h = torch.cat([ex, h], -1)
            h = F.relu(l(h))
        sigma = F.relu(self.sigma(h)).squeeze(-1)
        rgb = torch.sigmoid(self.rgb(torch.cat([self.feat(h), ed], -1)))
        deltas = z_vals[..., 1:] - z_vals[..., :-1]
        deltas = torch.cat([deltas, torch.full_like(deltas[..., :1], 1e10)], -1)
        alpha = 1 - torch.exp(-sigma * deltas)
        T = torch.cumprod(1 - alpha + 1e-10, -1)
        T = torch.cat([torch.ones_like(T[..., :1]), T[..., :-1]], -1)
        weights = alpha * T
        rgb_map = (weights[..., None] * rgb).sum(-2)
        depth = (weights * z_vals).sum(-1)
        return F.mse_loss(rgb_map, target) + 0.0 * depth.mean()


NAMES = ["gated_mlp_lm", "glu_convnet", "vq_codebook", "mixup_resnet", "unet_attention_gate", "seq2seq_gru_attn",
         "pointnet_seg_tnet", "nerf_tiny_encoding"]


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    if name == "gated_mlp_lm":
        return GatedMLPLM(), [common.token_ids((B, 128), 512, g)]
    if name == "glu_convnet":
        t = common.token_ids((B, 129), 512, g)
        return GLUConvLM(), [t[:, :-1].contiguous(), t[:, 1:].contiguous()]
    if name == "vq_codebook":
        side = max(32, S // 4 * 4)
        return VQVAE(), [common.float_input((B, 3, side, side), dtype, g)]
    if name == "mixup_resnet":
        side = max(32, S // 3 // 8 * 8)                                          # 32 at --image 96
        perm = torch.randperm(B, generator=g)
        lam = torch.rand((), generator=g, dtype=torch.float64)
        return MixupResNet(), [common.float_input((B, 3, side, side), dtype, g), common.token_ids((B,), 10, g), perm,
                               lam.to(dtype)]
    if name == "unet_attention_gate":
        side = max(32, S // 8 * 8)
        mask = (torch.rand((B, 1, side, side), generator=g) < 0.3).to(dtype)
        return SEUNet(), [common.float_input((B, 3, side, side), dtype, g), mask]
    if name == "seq2seq_gru_attn":
        Ls, Lt = 24, 16
        src = torch.randint(1, 400, (B, Ls), generator=g)
        lens = torch.randint(Ls // 2, Ls + 1, (B,), generator=g)
        lens[0] = Ls
        pad = torch.arange(Ls)[None] >= lens[:, None]
        src = src.masked_fill(pad, 0)
        tgt = torch.randint(1, 400, (B, Lt + 1), generator=g)
        tl = torch.randint(Lt // 2, Lt + 2, (B,), generator=g)
        tgt = tgt.masked_fill(torch.arange(Lt + 1)[None] >= tl[:, None], 0)
        tgt[:, 0] = 1
        return Seq2SeqAttn(), [src, pad, tgt[:, :-1].contiguous(), tgt[:, 1:].contiguous()]
    if name == "pointnet_seg_tnet":
        N = 1024
        return PointNetSeg(), [common.float_input((B, 3, N), dtype, g), common.token_ids((B, N), 8, g)]
    if name == "nerf_tiny_encoding":
        R, Sm = 256 * B, 32
        o = common.float_input((R, 3), dtype, g) * 0.1
        d = common.float_input((R, 3), dtype, g)
        z = torch.linspace(2.0, 6.0, Sm, dtype=torch.float64)[None].expand(R, Sm)
        z = z + torch.rand((R, Sm), generator=g, dtype=torch.float64) * (4.0 / Sm)
        return TinyNeRF(), [o, d, z.to(dtype).contiguous(), torch.rand((R, 3), generator=g, dtype=torch.float64).to(dtype)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen14.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
