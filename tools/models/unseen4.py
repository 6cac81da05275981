#!/usr/bin/env python3
"""unseen4.py — a fourth set of models nobody tuned rkmate for (after
tools/models/unseen.py, unseen2.py and unseen3.py), all small and
hand-written, each with idioms that zoo.py, unseen.py, unseen2.py, unseen3.py
and coverage.py do not have: a ResMLP (Affine layers: per-channel scale and
shift parameters instead of a norm, LayerScale, token mixing by a Linear
between two transposes), a DETR-style head (learned query embeddings expanded
over the batch, nn.TransformerDecoder with cross-attention to a flattened
feature map plus a learned position parameter, class logits and sigmoid
boxes), a T5 encoder (relative position bias: a bucketed int64 buffer looked
up in an nn.Embedding, permuted and added to unscaled attention scores,
computed once and shared by every layer; T5 RMSNorm without bias whose
variance is taken in float32; gated-GELU feed-forward), a deformable sampler
(offsets and a modulation mask from a conv, tanh-scaled, added to a
base-grid buffer, F.grid_sample with border padding), a SIREN (sin
activations with w0 scaling and SIREN's uniform init over a coordinate-grid
buffer expanded over the batch and concatenated with a latent code), a NeRF
MLP (positional encoding with sin / cos of a power-of-two frequency buffer,
skip concat, relu density and sigmoid colour, alpha compositing with
torch.cumprod of a shifted transmittance and exp(-cumsum) opacity), a
Gumbel-softmax categorical VAE (log of log of torch.rand_like noise, softmax
with a temperature, hard straight-through through F.one_hot of argmax, a KL
term to the uniform prior), a temporal shift module (channel slices shifted
along time by torch.cat with zero pads made by new_zeros), an MBConv stack
with stochastic depth (torch.bernoulli of a new_full probability tensor, and
new_empty(...).bernoulli_ in place) and drop-connect on the SE gate, a graph
attention network (leaky_relu edge scores, a scatter softmax written by hand
with index_select / exp / index_add / division, multi-head concat then
mean), a Performer-style linear attention (elu + 1 feature maps, einsum of
k^T v, then q (k^T v) over an einsum normaliser) and a "clamps" model
(torch.where masks, clamp_min / clamp_max, amax with keepdim, float64
buffers cast with .to(x.dtype), a label-smoothed cross-entropy written with
log_softmax / gather / mean against an int64 target buffer, returned as a
second output).  Exported like the zoo (tools/models/common.export), with
the zoo's options, so that `tools/bench/zoo.py --models-script
tools/models/unseen4.py` runs them through the same bench.

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


# ----------------------------------------------------------------------------- ResMLP

class Affine(nn.Module):
    """ResMLP's Affine: x * alpha + beta with per-channel parameters (no statistics)."""

    def __init__(self, d):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(d)); self.beta = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        return self.alpha * x + self.beta


class ResMLPBlock(nn.Module):
    """Token mixing: Affine, transpose, Linear over the patches, transpose, LayerScale; channel
    mixing: Affine, Linear, GELU, Linear, LayerScale."""

    def __init__(self, d, n, init=0.1):
        super().__init__()
        self.aff1, self.aff2 = Affine(d), Affine(d)
        self.tok = nn.Linear(n, n)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))
        self.ls1 = nn.Parameter(init * torch.ones(d)); self.ls2 = nn.Parameter(init * torch.ones(d))

    def forward(self, x):   # B, N, d
        x = x + self.ls1 * self.tok(self.aff1(x).transpose(1, 2)).transpose(1, 2)
        return x + self.ls2 * self.mlp(self.aff2(x))


class ResMLP(nn.Module):
    """8x8 patch embedding by a strided conv, three ResMLP blocks, a final Affine, mean over
    patches, a linear head."""

    def __init__(self, image=48, patch=8, d=96, depth=3, classes=10):
        super().__init__()
        n = (image // patch) ** 2
        self.embed = nn.Conv2d(3, d, patch, patch)
        self.blocks = nn.Sequential(*[ResMLPBlock(d, n) for _ in range(depth)])
        self.norm = Affine(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.embed(x).flatten(2).transpose(1, 2)
        return self.head(self.norm(self.blocks(x)).mean(1))


# ----------------------------------------------------------------------------- DETR-style decoder

class DETRHead(nn.Module):
    """A strided conv backbone, a 1x1 input projection, the map flattened to a memory sequence plus
    a learned position parameter, learned query embeddings expanded over the batch as the target
    of a 2-layer nn.TransformerDecoder (self-attention, cross-attention, ReLU FFN, final
    LayerNorm); a class head and a 3-layer box MLP with sigmoid."""

    def __init__(self, image=48, d=64, queries=10, classes=11):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU(),
                                      nn.Conv2d(32, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.ReLU(),
                                      nn.Conv2d(64, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.ReLU())
        s = image // 8
        self.proj = nn.Conv2d(64, d, 1)
        self.pos = nn.Parameter(0.02 * torch.randn(1, s * s, d))
        self.query = nn.Embedding(queries, d)
        layer = nn.TransformerDecoderLayer(d, 4, dim_feedforward=128, dropout=0.1, batch_first=True)
        self.dec = nn.TransformerDecoder(layer, 2, norm=nn.LayerNorm(d))
        self.cls = nn.Linear(d, classes)
        self.box = nn.Sequential(nn.Linear(d, d), nn.ReLU(), nn.Linear(d, d), nn.ReLU(), nn.Linear(d, 4))

    def forward(self, x):
        B = x.shape[0]
        mem = self.proj(self.backbone(x)).flatten(2).transpose(1, 2) + self.pos
        tgt = self.query.weight.unsqueeze(0).expand(B, -1, -1)
        h = self.dec(tgt, mem)
        return self.cls(h), torch.sigmoid(self.box(h))


# ----------------------------------------------------------------------------- T5 encoder

def t5_buckets(seq, buckets=32, max_distance=128):
    """T5's bidirectional relative-position buckets, as an int64 (seq, seq) table."""
    ctx = torch.arange(seq)[:, None]; mem = torch.arange(seq)[None, :]
    rel = mem - ctx
    nb = buckets // 2
    out = (rel > 0).long() * nb
    n = rel.abs()
    max_exact = nb // 2
    large = max_exact + (torch.log(n.float().clamp(min=1) / max_exact) / math.log(max_distance / max_exact)
                         * (nb - max_exact)).long()
    large = torch.min(large, torch.full_like(large, nb - 1))
    return out + torch.where(n < max_exact, n, large)


class T5Norm(nn.Module):
    """T5LayerNorm: no mean, no bias; the variance of x.to(float32), the weight times x cast back."""

    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d)); self.eps = eps

    def forward(self, x):
        var = x.to(torch.float32).pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(var + self.eps)
        return self.weight * x.to(self.weight.dtype)


class T5Layer(nn.Module):
    def __init__(self, d, heads, ff):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.ln1 = T5Norm(d); self.qkv = nn.Linear(d, 3 * d, bias=False); self.o = nn.Linear(d, d, bias=False)
        self.ln2 = T5Norm(d)
        self.wi0 = nn.Linear(d, ff, bias=False); self.wi1 = nn.Linear(d, ff, bias=False)
        self.wo = nn.Linear(ff, d, bias=False)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, bias):
        B, T, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.h, self.hd).permute(2, 0, 3, 1, 4).unbind(0)
        s = torch.matmul(q, k.transpose(-1, -2)) + bias          # T5: no 1/sqrt(d) scaling
        a = self.drop(F.softmax(s.float(), dim=-1).type_as(s))
        x = x + self.drop(self.o(torch.matmul(a, v).transpose(1, 2).reshape(B, T, D)))
        h = self.ln2(x)
        return x + self.drop(self.wo(self.drop(F.gelu(self.wi0(h), approximate="tanh") * self.wi1(h))))


class T5Encoder(nn.Module):
    """Token embedding, the relative position bias (an nn.Embedding of (buckets, heads) indexed by
    an int64 bucket buffer, permuted to (1, heads, T, T)) computed once and added in every layer,
    three pre-norm layers, final T5Norm, tied head scaled by d^-0.5."""

    def __init__(self, vocab=256, d=96, heads=4, ff=192, layers=3, seq=64):
        super().__init__()
        self.d = d
        self.emb = nn.Embedding(vocab, d)
        self.register_buffer("buckets", t5_buckets(seq))
        self.rel = nn.Embedding(32, heads)
        self.layers = nn.ModuleList([T5Layer(d, heads, ff) for _ in range(layers)])
        self.ln = T5Norm(d)

    def forward(self, ids):
        T = ids.shape[1]
        bias = self.rel(self.buckets[:T, :T]).permute(2, 0, 1).unsqueeze(0)
        x = self.emb(ids)
        for layer in self.layers:
            x = layer(x, bias)
        return F.linear(self.ln(x) * (self.d ** -0.5), self.emb.weight)


# ----------------------------------------------------------------------------- deformable sampler

class DeformSample(nn.Module):
    """Offsets (2 channels, tanh * max shift in normalised units) and a modulation mask (sigmoid)
    from a 3x3 conv; the base grid buffer (1, H, W, 2) from linspace + meshgrid plus the permuted
    offsets, F.grid_sample (bilinear, border, align_corners=True), mask multiply, 1x1 conv."""

    def __init__(self, c, size, shift=0.25):
        super().__init__()
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, size), torch.linspace(-1, 1, size), indexing="ij")
        self.register_buffer("base", torch.stack([xs, ys], -1).unsqueeze(0))
        self.off = nn.Conv2d(c, 3, 3, padding=1)
        nn.init.normal_(self.off.weight, std=0.01)
        self.shift = shift
        self.out = nn.Conv2d(c, c, 1)

    def forward(self, x):
        o = self.off(x)
        grid = self.base + self.shift * torch.tanh(o[:, :2]).permute(0, 2, 3, 1)
        y = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=True)
        return self.out(y * torch.sigmoid(o[:, 2:]))


class Deform(nn.Module):
    """Stem, two deformable samplers with residuals and BatchNorm at two scales, head."""

    def __init__(self, image=48, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU())
        s = image // 2
        self.d1 = DeformSample(32, s); self.bn1 = nn.BatchNorm2d(32)
        self.down = nn.Conv2d(32, 48, 3, 2, 1)
        self.d2 = DeformSample(48, s // 2); self.bn2 = nn.BatchNorm2d(48)
        self.head = nn.Linear(48, classes)

    def forward(self, x):
        x = self.stem(x)
        x = F.relu(self.bn1(x + self.d1(x)))
        x = self.down(x)
        x = F.relu(self.bn2(x + self.d2(x)))
        return self.head(x.mean((2, 3)))


# ----------------------------------------------------------------------------- SIREN

class SineLayer(nn.Module):
    """sin(w0 * (W x + b)) with SIREN's initialisation."""

    def __init__(self, i, o, w0, first=False):
        super().__init__()
        self.w0 = w0
        self.lin = nn.Linear(i, o)
        bound = 1.0 / i if first else math.sqrt(6.0 / i) / w0
        nn.init.uniform_(self.lin.weight, -bound, bound)

    def forward(self, x):
        return torch.sin(self.w0 * self.lin(x))


class Siren(nn.Module):
    """A coordinate-grid buffer (H*W, 2) in [-1, 1] expanded over the batch, concatenated with a
    per-sample latent code expanded over the pixels, four sine layers (w0 = 30 first), a linear
    RGB output viewed back to (B, 3, H, W)."""

    def __init__(self, size=32, latent=16, hidden=64, w0=30.0):
        super().__init__()
        ys, xs = torch.meshgrid(torch.linspace(-1, 1, size), torch.linspace(-1, 1, size), indexing="ij")
        self.register_buffer("coords", torch.stack([xs, ys], -1).view(-1, 2))
        self.size = size
        self.net = nn.Sequential(SineLayer(2 + latent, hidden, w0, first=True), SineLayer(hidden, hidden, 1.0),
                                 SineLayer(hidden, hidden, 1.0), SineLayer(hidden, hidden, 1.0))
        self.out = nn.Linear(hidden, 3)

    def forward(self, z):   # B, latent
        B, P = z.shape[0], self.coords.shape[0]
        x = torch.cat([self.coords.unsqueeze(0).expand(B, -1, -1), z.unsqueeze(1).expand(-1, P, -1)], -1)
        return self.out(self.net(x)).transpose(1, 2).reshape(B, 3, self.size, self.size)


# ----------------------------------------------------------------------------- NeRF

class NeRF(nn.Module):
    """Positional encoding of points (L=6) and view directions (L=3) by a frequency buffer
    (2^k * pi): x, sin, cos concatenated; a 5-layer MLP with the encoding concatenated back in at
    layer 3; density = relu(Linear), colour = sigmoid(Linear(features, direction encoding)); volume
    rendering along each ray with deltas from a sample-depth buffer: alpha = 1 - exp(-sigma delta),
    weights = alpha * cumprod of the shifted (1 - alpha), RGB / depth / accumulated opacity, and
    the opacity 1 - exp(-cumsum(sigma delta)) at the last sample."""

    def __init__(self, samples=16, hidden=64, lp=6, ld=3):
        super().__init__()
        self.register_buffer("fp", (2.0 ** torch.arange(lp)) * math.pi)
        self.register_buffer("fd", (2.0 ** torch.arange(ld)) * math.pi)
        t = torch.linspace(2.0, 6.0, samples)
        self.register_buffer("t", t)
        self.register_buffer("delta", torch.cat([t[1:] - t[:-1], torch.tensor([1e3])]))
        ep, ed = 3 + 6 * lp, 3 + 6 * ld
        self.l0 = nn.Linear(ep, hidden); self.l1 = nn.Linear(hidden, hidden); self.l2 = nn.Linear(hidden, hidden)
        self.l3 = nn.Linear(hidden + ep, hidden); self.l4 = nn.Linear(hidden, hidden)
        self.sigma = nn.Linear(hidden, 1)
        self.feat = nn.Linear(hidden, hidden)
        self.rgb = nn.Sequential(nn.Linear(hidden + ed, hidden // 2), nn.ReLU(), nn.Linear(hidden // 2, 3))

    @staticmethod
    def encode(x, f):
        xf = (x.unsqueeze(-1) * f).flatten(-2)
        return torch.cat([x, torch.sin(xf), torch.cos(xf)], -1)

    def forward(self, origins, dirs):   # R, 3 each
        R, S = origins.shape[0], self.t.shape[0]
        pts = origins.unsqueeze(1) + dirs.unsqueeze(1) * self.t.view(1, S, 1)          # R, S, 3
        ep = self.encode(pts, self.fp)
        h = F.relu(self.l0(ep)); h = F.relu(self.l1(h)); h = F.relu(self.l2(h))
        h = F.relu(self.l3(torch.cat([h, ep], -1))); h = F.relu(self.l4(h))
        sigma = F.relu(self.sigma(h)).squeeze(-1)                                        # R, S
        d = F.normalize(dirs, dim=-1)
        ed = self.encode(d, self.fd).unsqueeze(1).expand(-1, S, -1)
        rgb = torch.sigmoid(self.rgb(torch.cat([self.feat(h), ed], -1)))                # R, S, 3
        sd = sigma * self.delta
        alpha = 1.0 - torch.exp(-sd)
        trans = torch.cumprod(torch.cat([torch.ones_like(alpha[:, :1]), 1.0 - alpha + 1e-10], -1), -1)[:, :-1]
        w = alpha * trans
        rgb_map = (w.unsqueeze(-1) * rgb).sum(1)
        depth = (w * self.t).sum(1)
        acc = w.sum(1)
        opacity = 1.0 - torch.exp(-torch.cumsum(sd, -1))[:, -1]
        return rgb_map, depth, acc, opacity


# ----------------------------------------------------------------------------- Gumbel-softmax VAE

class GumbelVAE(nn.Module):
    """A conv encoder to logits of 8 categorical latents of 16 classes; Gumbel noise
    -log(-log(U + eps) + eps) from torch.rand_like, softmax((logits + g) / tau), the hard sample
    F.one_hot(argmax) made straight-through (hard - y.detach() + y); an MLP + ConvTranspose
    decoder; returns (reconstruction, KL to the uniform prior, int64 codes)."""

    def __init__(self, image=32, n=8, k=16, tau=0.7):
        super().__init__()
        self.n, self.k, self.tau, self.s = n, k, tau, image // 4
        self.enc = nn.Sequential(nn.Conv2d(3, 32, 4, 2, 1), nn.ReLU(), nn.Conv2d(32, 32, 4, 2, 1), nn.ReLU(),
                                 nn.Flatten(), nn.Linear(32 * self.s * self.s, n * k))
        self.dec = nn.Sequential(nn.Linear(n * k, 32 * self.s * self.s), nn.ReLU())
        self.up = nn.Sequential(nn.ConvTranspose2d(32, 32, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(32, 3, 4, 2, 1))

    def forward(self, x):
        B = x.shape[0]
        logits = self.enc(x).view(B, self.n, self.k)
        u = torch.rand_like(logits)
        g = -torch.log(-torch.log(u + 1e-10) + 1e-10)
        y = F.softmax((logits + g) / self.tau, -1)
        codes = y.argmax(-1)
        hard = F.one_hot(codes, self.k).to(y.dtype)
        z = hard - y.detach() + y
        rec = self.up(self.dec(z.flatten(1)).view(B, 32, self.s, self.s))
        q = F.softmax(logits, -1)
        kl = (q * torch.log(q * self.k + 1e-10)).sum((1, 2)).mean()
        return rec, kl, codes


# ----------------------------------------------------------------------------- temporal shift

def temporal_shift(x, T, div=8):
    """TSM: of (B*T, C, H, W), 1/div of the channels moved one step back in time, 1/div one step
    forward, the vacated frames filled by new_zeros, joined by torch.cat."""
    BT, C, H, W = x.shape
    x = x.view(BT // T, T, C, H, W)
    f = C // div
    z = x.new_zeros(BT // T, 1, f, H, W)
    left = torch.cat([x[:, 1:, :f], z], 1)
    right = torch.cat([z, x[:, :-1, f:2 * f]], 1)
    return torch.cat([left, right, x[:, :, 2 * f:]], 2).view(BT, C, H, W)


class TSMBlock(nn.Module):
    def __init__(self, c, T):
        super().__init__()
        self.T = T
        self.c1 = nn.Conv2d(c, c, 3, padding=1, bias=False); self.b1 = nn.BatchNorm2d(c)
        self.c2 = nn.Conv2d(c, c, 3, padding=1, bias=False); self.b2 = nn.BatchNorm2d(c)

    def forward(self, x):
        h = F.relu(self.b1(self.c1(temporal_shift(x, self.T))))
        return F.relu(x + self.b2(self.c2(h)))


class TSM(nn.Module):
    """A clip (B, T, 3, H, W) folded to (B*T, ...), stem, residual blocks with a temporal shift
    before the first conv, a strided stage, mean over space then time, head."""

    def __init__(self, T=4, classes=10):
        super().__init__()
        self.T = T
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU())
        self.s1 = nn.Sequential(TSMBlock(32, T), TSMBlock(32, T))
        self.down = nn.Sequential(nn.Conv2d(32, 48, 3, 2, 1, bias=False), nn.BatchNorm2d(48), nn.ReLU())
        self.s2 = TSMBlock(48, T)
        self.head = nn.Linear(48, classes)

    def forward(self, clip):
        B, T = clip.shape[:2]
        x = self.s2(self.down(self.s1(self.stem(clip.flatten(0, 1)))))
        return self.head(x.mean((2, 3)).view(B, T, -1).mean(1))


# ----------------------------------------------------------------------------- MBConv + stochastic depth

class MBConv(nn.Module):
    """Expand 1x1, depthwise 3x3, SE (SiLU, sigmoid) with drop-connect on the gate (a bernoulli_
    mask made in place on new_empty), project 1x1; the residual branch dropped per sample by
    torch.bernoulli of a new_full probability tensor, scaled by 1 / keep."""

    def __init__(self, c, expand=4, keep=0.8):
        super().__init__()
        e = c * expand
        self.keep = keep
        self.exp = nn.Sequential(nn.Conv2d(c, e, 1, bias=False), nn.BatchNorm2d(e), nn.SiLU())
        self.dw = nn.Sequential(nn.Conv2d(e, e, 3, padding=1, groups=e, bias=False), nn.BatchNorm2d(e), nn.SiLU())
        self.se1 = nn.Conv2d(e, c // 4, 1); self.se2 = nn.Conv2d(c // 4, e, 1)
        self.proj = nn.Sequential(nn.Conv2d(e, c, 1, bias=False), nn.BatchNorm2d(c))

    def forward(self, x):
        B = x.shape[0]
        h = self.dw(self.exp(x))
        gate = torch.sigmoid(self.se2(F.silu(self.se1(h.mean((2, 3), keepdim=True)))))
        dc = gate.new_empty(gate.shape).bernoulli_(0.9) / 0.9
        h = self.proj(h * (gate * dc))
        mask = torch.bernoulli(x.new_full((B, 1, 1, 1), self.keep))
        return x + h * mask / self.keep


class MBNet(nn.Module):
    """Stem, two MBConv blocks at each of two widths (strided transition), head with dropout."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1, bias=False), nn.BatchNorm2d(24), nn.SiLU())
        self.b1 = nn.Sequential(MBConv(24), MBConv(24))
        self.t = nn.Sequential(nn.Conv2d(24, 40, 3, 2, 1, bias=False), nn.BatchNorm2d(40), nn.SiLU())
        self.b2 = nn.Sequential(MBConv(40), MBConv(40))
        self.head = nn.Sequential(nn.Dropout(0.2), nn.Linear(40, classes))

    def forward(self, x):
        return self.head(self.b2(self.t(self.b1(self.stem(x)))).mean((2, 3)))


# ----------------------------------------------------------------------------- GAT

class GATLayer(nn.Module):
    """Multi-head graph attention: h = W x viewed (N, heads, F); edge scores
    leaky_relu(a_src . h[src] + a_dst . h[dst], 0.2) by index_select; a hand-written scatter softmax
    over each node's incoming edges (exp of scores less their detached amax, denominators by
    index_add into new_zeros, divided after index_select); messages index_add'ed; heads concatenated
    (or averaged in the last layer)."""

    def __init__(self, i, o, heads, concat=True):
        super().__init__()
        self.h, self.o, self.concat = heads, o, concat
        self.W = nn.Linear(i, heads * o, bias=False)
        self.a_src = nn.Parameter(0.1 * torch.randn(1, heads, o)); self.a_dst = nn.Parameter(0.1 * torch.randn(1, heads, o))
        self.bias = nn.Parameter(torch.zeros(heads * o if concat else o))
        self.drop = nn.Dropout(0.1)

    def forward(self, x, src, dst):
        N = x.shape[0]
        h = self.W(x).view(N, self.h, self.o)
        es = (h * self.a_src).sum(-1); ed = (h * self.a_dst).sum(-1)         # N, heads
        e = F.leaky_relu(es.index_select(0, src) + ed.index_select(0, dst), 0.2)   # E, heads
        ex = torch.exp(e - e.amax(0, keepdim=True).detach())
        den = ex.new_zeros(N, self.h).index_add(0, dst, ex)
        alpha = self.drop(ex / (den.index_select(0, dst) + 1e-16))
        msg = h.index_select(0, src) * alpha.unsqueeze(-1)
        out = h.new_zeros(N, self.h, self.o).index_add(0, dst, msg)
        out = out.flatten(1) if self.concat else out.mean(1)
        return out + self.bias


class GAT(nn.Module):
    """Node features (N, 32) and a fixed random graph with self-loops held as int64 src / dst
    buffers; GAT(4 heads, concat) + ELU, GAT(4 heads, concat) + ELU, GAT(1 output of 4 averaged
    heads) to class log-probabilities per node."""

    def __init__(self, nodes, feat=32, hidden=16, classes=7, degree=6):
        super().__init__()
        g = torch.Generator(); g.manual_seed(1234)
        src = torch.randint(0, nodes, (nodes * degree,), generator=g)
        dst = torch.randint(0, nodes, (nodes * degree,), generator=g)
        loops = torch.arange(nodes)
        self.register_buffer("src", torch.cat([src, loops])); self.register_buffer("dst", torch.cat([dst, loops]))
        self.g1 = GATLayer(feat, hidden, 4); self.g2 = GATLayer(4 * hidden, hidden, 4)
        self.g3 = GATLayer(4 * hidden, classes, 4, concat=False)
        self.drop = nn.Dropout(0.2)

    def forward(self, x):
        x = F.elu(self.g1(self.drop(x), self.src, self.dst))
        x = F.elu(self.g2(self.drop(x), self.src, self.dst))
        return F.log_softmax(self.g3(x, self.src, self.dst), -1)


# ----------------------------------------------------------------------------- Performer / linear attention

class LinearAttention(nn.Module):
    """phi(x) = elu(x) + 1 on q and k; kv = einsum('bhnd,bhne->bhde'); normaliser
    1 / einsum('bhnd,bhd->bhn', q, k.sum(2)); out = einsum('bhnd,bhde,bhn->bhne')."""

    def __init__(self, d, heads):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d); self.o = nn.Linear(d, d)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, self.hd).permute(2, 0, 3, 1, 4).unbind(0)
        q = F.elu(q) + 1.0; k = F.elu(k) + 1.0
        kv = torch.einsum("bhnd,bhne->bhde", k, v)
        z = 1.0 / (torch.einsum("bhnd,bhd->bhn", q, k.sum(2)) + 1e-6)
        out = torch.einsum("bhnd,bhde,bhn->bhne", q, kv, z)
        return self.o(out.transpose(1, 2).reshape(B, T, D))


class Performer(nn.Module):
    """Token + sinusoidal position (a buffer), three pre-LN blocks of linear attention and a
    GELU MLP, mean-pooled head."""

    def __init__(self, vocab=256, d=96, heads=4, layers=3, seq=128, classes=10):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        pos = torch.arange(seq)[:, None] / (10000 ** (torch.arange(0, d, 2)[None] / d))
        self.register_buffer("pe", torch.stack([pos.sin(), pos.cos()], -1).flatten(1))
        self.ln1 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
        self.att = nn.ModuleList([LinearAttention(d, heads) for _ in range(layers)])
        self.ln2 = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
        self.mlp = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(2 * d, d))
                                  for _ in range(layers)])
        self.head = nn.Linear(d, classes)

    def forward(self, ids):
        x = self.emb(ids) + self.pe[: ids.shape[1]]
        for l1, a, l2, m in zip(self.ln1, self.att, self.ln2, self.mlp):
            x = x + a(l1(x))
            x = x + m(l2(x))
        return self.head(x.mean(1))


# ----------------------------------------------------------------------------- clamps

class Clamps(nn.Module):
    """A conv net whose activations go through torch.where masks (a leaky branch where x < 0, a
    learnable ceiling where x > threshold), clamp_min / clamp_max, per-sample scaling by amax of
    abs with keepdim; float64 buffers (per-channel means and a class prior) cast with
    .to(x.dtype); returns (logits, label-smoothed cross-entropy against an int64 target buffer
    written with log_softmax, gather and mean).  The float64 buffers stay float64 (the model is
    exported with keeps_dtype)."""

    def __init__(self, batch, classes=10, eps=0.1):
        super().__init__()
        self.register_buffer("mean", torch.tensor([0.485, 0.456, 0.406], dtype=torch.float64).view(1, 3, 1, 1))
        self.register_buffer("prior", torch.linspace(-0.5, 0.5, classes, dtype=torch.float64))
        g = torch.Generator(); g.manual_seed(77)
        self.register_buffer("target", torch.randint(0, classes, (batch,), generator=g))
        self.c1 = nn.Conv2d(3, 32, 3, 2, 1); self.c2 = nn.Conv2d(32, 48, 3, 2, 1); self.c3 = nn.Conv2d(48, 64, 3, 2, 1)
        self.ceil = nn.Parameter(torch.full((1, 48, 1, 1), 2.0))
        self.head = nn.Linear(64, classes)
        self.eps = eps

    def forward(self, x):
        x = x - self.mean.to(x.dtype)
        h = self.c1(x)
        h = torch.where(h < 0, 0.2 * h, h).clamp_max(4.0)
        h = self.c2(h)
        h = torch.where(h > self.ceil, self.ceil + 0.1 * (h - self.ceil), h)
        h = h / (h.abs().amax((2, 3), keepdim=True) + 1e-3)
        h = self.c3(h).clamp_min(-0.5)
        logits = self.head(h.mean((2, 3))) + self.prior.to(x.dtype)
        logp = F.log_softmax(logits, -1)
        nll = -logp.gather(1, self.target.unsqueeze(1)).squeeze(1)
        smooth = -logp.mean(-1)
        loss = ((1.0 - self.eps) * nll + self.eps * smooth).mean()
        return logits, loss


NAMES = ["resmlp", "detr", "t5", "deform", "siren", "nerf", "gumbelvae", "tsm", "mbconv_sd", "gat", "performer",
         "clamps"]


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    half = max(16, (S // 2) // 16 * 16)     # 48 at the default --image 96
    if name == "resmlp":
        return ResMLP(half), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "detr":
        return DETRHead(half), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "t5":
        return T5Encoder(), [common.token_ids((B, 64), 256, g)]
    if name == "deform":
        return Deform(half), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "siren":
        return Siren(32), [common.float_input((B, 16), dtype, g)]
    if name == "nerf":
        R = 64 * B
        return NeRF(), [common.float_input((R, 3), dtype, g), common.float_input((R, 3), dtype, g)]
    if name == "gumbelvae":
        return GumbelVAE(32), [common.float_input((B, 3, 32, 32), dtype, g)]
    if name == "tsm":
        return TSM(4), [common.float_input((B, 4, 3, 32, 32), dtype, g)]
    if name == "mbconv_sd":
        return MBNet(), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "gat":
        N = 64 * B
        return GAT(N), [common.float_input((N, 32), dtype, g)]
    if name == "performer":
        return Performer(), [common.token_ids((B, 128), 256, g)]
    if name == "clamps":
        m = Clamps(B).to(dtype)
        m.mean = m.mean.to(torch.float64); m.prior = m.prior.to(torch.float64)
        return m, [common.float_input((B, 3, half, half), dtype, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen4.pt", NAMES, build,
                                 keeps_dtype=("clamps",))


if __name__ == "__main__":
    sys.exit(main())
