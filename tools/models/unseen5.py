#!/usr/bin/env python3
"""unseen5.py — a fifth set of models nobody tuned rkmate for (after
tools/models/unseen.py, unseen2.py, unseen3.py and unseen4.py), all small and
hand-written, each with idioms the other sets do not have: a Mamba-style
selective state-space model (an input-dependent scan unrolled in Python over
the time steps with exp of softplus deltas times -exp(A_log), a causal
depthwise Conv1d cut back with a slice, split into three pieces, and a
Mamba-2 SSD layer: cumsum, a segment-sum matrix masked with -inf above the
diagonal of a tril mask built in forward, exp, einsum), RWKV time mixing
(token shift by F.pad with a negative pad, the WKV recurrence unrolled with
torch.maximum-stabilised exponentials, squared-ReLU channel mixing), a
mixture-of-depths router (topk over tokens, sort of the indices, gather of
the chosen tokens, a block on them only, scatter_add back, and an
index_put_ of a second block's tokens into a clone), ALiBi + rotary
attention (slopes times a distance matrix from torch.arange built in
forward, a causal mask from triu, rotary embeddings applied by
torch.view_as_complex / torch.complex / view_as_real in one layer and by
torch.roll in the other), PointNet++ set abstraction (farthest point
sampling unrolled with argmax / minimum, torch.cdist, topk with
largest=False, gather of neighbour features, max over neighbours), a
CLIP two-tower contrastive loss (masked mean text pooling plus an
EOT token picked by argmax and advanced indexing, F.normalize, an
exp'ed and clamped logit_scale, cross-entropy both ways against arange
labels), VICReg + Barlow Twins losses (two views made by torch.rot90 and
torch.flip, BatchNorm1d projector, variance hinge on sqrt(var), covariance
off-diagonal by the flatten()[:-1].view(n-1, n+1)[:, 1:] trick,
torch.diagonal), weight reparametrisations (weight standardisation inside
forward, nn.utils.weight_norm's _weight_norm, a hand spectral norm whose power
iteration writes its u and v buffers in place (copy_) every training forward,
GroupNorm), an ESPCN super-resolution net (pixel_unshuffle, pixel_shuffle,
ConvTranspose2d with output_padding, bilinear interpolate with
align_corners=True, bicubic interpolate, torch.addcmul, smooth_l1_loss), a
masked autoencoder (torch.rand noise in forward, argsort twice, gather of
the kept patches, a mask written by a slice assignment then gathered,
expanded mask tokens, normalised-pixel loss over the masked patches), a CTC
speech model (strided Conv1d, log_softmax transposed to (T, B, C),
F.ctc_loss with int64 target and length buffers), Transformer-XL memory
(the first segment's hidden states detached and concatenated to the second's
keys, torch.baddbmm scores with a parameter relative bias looked up by an
index buffer, torch.addmm feed-forward, torch.addcmul gate), AdaIN style
transfer (InstanceNorm2d, ReflectionPad2d, feature mean/std statistics of a
second input, Gram matrices by bmm, a frozen encoder, a no-grad EMA-teacher
branch whose weights are buffers, several weighted losses summed), and a
fake-quantised net (straight-through round trick, LSQ learned step with
gradient scaling, repeat_interleave of a parameter, F.unfold local-window
attention and F.fold overlap-add with a fold(ones) normaliser, torch.flip,
a hand-written log-sum-exp with a detached max, masked_fill(-inf) and
nan_to_num).  Exported like the zoo (tools/models/common.export), with the
zoo's options, so that `tools/bench/zoo.py --models-script
tools/models/unseen5.py` runs them through the same bench.

--list prints the names.  Sizes are small by default (--image 96, --batch 4).
"""

import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import torch  # noqa: E402
from unseen2 import RMSNorm  # noqa: E402  (hand-written, as LLaMA's)

nn = torch.nn
F = torch.nn.functional


# ----------------------------------------------------------------------------- Mamba / SSD

class SelectiveScan(nn.Module):
    """Mamba's block: in_proj to (u, z), causal depthwise conv cut to L, SiLU, x_proj split into
    (dt, B, C), softplus dt, dA = exp(dt * -exp(A_log)), the scan h = dA_t h + dt_t B_t u_t unrolled,
    y_t = <h, C_t>, skip D, gate silu(z), out_proj."""

    def __init__(self, d=32, n=8, expand=2, k=4):
        super().__init__()
        di = expand * d
        self.r, self.n, self.k = max(1, d // 16), n, k
        self.norm = RMSNorm(d)
        self.in_proj = nn.Linear(d, 2 * di, bias=False)
        self.conv = nn.Conv1d(di, di, k, groups=di, padding=k - 1)
        self.x_proj = nn.Linear(di, self.r + 2 * n, bias=False)
        self.dt_proj = nn.Linear(self.r, di)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, n + 1, dtype=torch.float32)).repeat(di, 1))
        self.D = nn.Parameter(torch.ones(di))
        self.out = nn.Linear(di, d, bias=False)

    def forward(self, x):   # B, L, d
        L = x.shape[1]
        u, z = self.in_proj(self.norm(x)).chunk(2, -1)
        u = F.silu(self.conv(u.transpose(1, 2))[..., :L].transpose(1, 2))
        dt, Bm, Cm = self.x_proj(u).split([self.r, self.n, self.n], -1)
        dt = F.softplus(self.dt_proj(dt))                                  # B, L, di
        A = -torch.exp(self.A_log)                                         # di, n
        dA = torch.exp(dt.unsqueeze(-1) * A)                               # B, L, di, n
        dBu = (dt * u).unsqueeze(-1) * Bm.unsqueeze(2)                     # B, L, di, n
        h = dBu[:, 0]
        ys = [torch.einsum("bdn,bn->bd", h, Cm[:, 0])]
        for t in range(1, L):
            h = dA[:, t] * h + dBu[:, t]
            ys.append(torch.einsum("bdn,bn->bd", h, Cm[:, t]))
        y = torch.stack(ys, 1) + u * self.D
        return x + self.out(y * F.silu(z))


def segsum(a):
    """Mamba-2's segment sum: out[..., i, j] = sum_{j < k <= i} a[..., k], -inf above the diagonal."""
    T = a.shape[-1]
    c = torch.cumsum(a, -1)
    s = c.unsqueeze(-1) - c.unsqueeze(-2)
    keep = torch.tril(torch.ones(T, T, dtype=torch.bool, device=a.device))
    return s.masked_fill(~keep, float("-inf"))


class SSD(nn.Module):
    """Mamba-2's quadratic (dual) form over one chunk: y = (C B^T * exp(segsum(dt * A))) (dt x)."""

    def __init__(self, d=32, n=16, heads=4):
        super().__init__()
        self.h, self.n = heads, n
        self.norm = RMSNorm(d)
        self.xz = nn.Linear(d, 2 * d); self.bc = nn.Linear(d, 2 * n); self.dt = nn.Linear(d, heads)
        self.A_log = nn.Parameter(torch.zeros(heads))
        self.out = nn.Linear(d, d)

    def forward(self, x):   # B, L, d
        Bsz, L, d = x.shape
        h = self.norm(x)
        xs, z = self.xz(h).chunk(2, -1)
        Bm, Cm = self.bc(h).chunk(2, -1)                                   # B, L, n
        dt = F.softplus(self.dt(h)).transpose(1, 2)                        # B, H, L
        Lmat = torch.exp(segsum(dt * -torch.exp(self.A_log).unsqueeze(-1)))  # B, H, L, L
        xs = xs.view(Bsz, L, self.h, d // self.h) * dt.transpose(1, 2).unsqueeze(-1)
        y = torch.einsum("bln,bsn,bhls,bshp->blhp", Cm, Bm, Lmat, xs).reshape(Bsz, L, d)
        return x + self.out(y * F.silu(z))


class Mamba(nn.Module):
    def __init__(self, vocab=256, d=32):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([SelectiveScan(d), SSD(d), SelectiveScan(d)])
        self.norm = RMSNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        for l in self.layers:
            x = l(x)
        return F.log_softmax(self.head(self.norm(x)), -1)


# ----------------------------------------------------------------------------- RWKV

class RWKVBlock(nn.Module):
    """RWKV-4: token shift by F.pad(x, (0, 0, 1, -1)); time mixing with the WKV recurrence unrolled
    (aa, bb, pp state, maximum-stabilised exponentials, time_first bonus u, decay -exp(w));
    channel mixing with relu(.)**2."""

    def __init__(self, d=32):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.mk, self.mv, self.mr = (nn.Parameter(torch.rand(d)) for _ in range(3))
        self.ck, self.cr = nn.Parameter(torch.rand(d)), nn.Parameter(torch.rand(d))
        self.decay = nn.Parameter(torch.linspace(-3, 0, d)); self.first = nn.Parameter(torch.full((d,), 0.5))
        self.key, self.value, self.rec, self.o = (nn.Linear(d, d, bias=False) for _ in range(4))
        self.fk, self.fr = nn.Linear(d, 4 * d, bias=False), nn.Linear(d, d, bias=False)
        self.fv = nn.Linear(4 * d, d, bias=False)

    def time_mix(self, x):   # B, T, d
        xx = F.pad(x, (0, 0, 1, -1))
        k = self.key(x * self.mk + xx * (1 - self.mk))
        v = self.value(x * self.mv + xx * (1 - self.mv))
        r = torch.sigmoid(self.rec(x * self.mr + xx * (1 - self.mr)))
        w = -torch.exp(self.decay)
        T = x.shape[1]
        aa = torch.zeros_like(k[:, 0]); bb = torch.zeros_like(k[:, 0]); pp = torch.full_like(k[:, 0], -1e38)
        out = []
        for t in range(T):
            kt, vt = k[:, t], v[:, t]
            ww = self.first + kt
            p = torch.maximum(pp, ww)
            e1, e2 = torch.exp(pp - p), torch.exp(ww - p)
            out.append((e1 * aa + e2 * vt) / (e1 * bb + e2))
            ww = pp + w
            p = torch.maximum(ww, kt)
            e1, e2 = torch.exp(ww - p), torch.exp(kt - p)
            aa, bb, pp = e1 * aa + e2 * vt, e1 * bb + e2, p
        return self.o(r * torch.stack(out, 1))

    def channel_mix(self, x):
        xx = F.pad(x, (0, 0, 1, -1))
        k = torch.square(torch.relu(self.fk(x * self.ck + xx * (1 - self.ck))))
        return torch.sigmoid(self.fr(x * self.cr + xx * (1 - self.cr))) * self.fv(k)

    def forward(self, x):
        x = x + self.time_mix(self.ln1(x))
        return x + self.channel_mix(self.ln2(x))


class RWKV(nn.Module):
    def __init__(self, vocab=256, d=32, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, d); self.ln0 = nn.LayerNorm(d)
        self.blocks = nn.Sequential(*[RWKVBlock(d) for _ in range(layers)])
        self.ln = nn.LayerNorm(d); self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        return self.head(self.ln(self.blocks(self.ln0(self.emb(ids)))))


# ----------------------------------------------------------------------------- mixture of depths

class MLPBlock(nn.Module):
    def __init__(self, d, heads=4):
        super().__init__()
        self.h = heads
        self.n1, self.n2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):   # B, N, d -> the residual update only
        B, N, d = x.shape
        q, k, v = self.qkv(self.n1(x)).view(B, N, 3, self.h, d // self.h).unbind(2)
        a = torch.softmax(torch.einsum("bnhd,bmhd->bhnm", q, k) / math.sqrt(d // self.h), -1)
        y = self.proj(torch.einsum("bhnm,bmhd->bnhd", a, v).reshape(B, N, d))
        return y + self.mlp(self.n2(x + y))


class MoD(nn.Module):
    """Mixture-of-depths: per block a router scores the tokens, topk picks capacity tokens, their
    indices are sorted, the tokens gathered, the block runs on them only, its update weighted by
    sigmoid(score) and scatter_add-ed back; the last block writes its tokens with index_put_ into
    a clone of the sequence."""

    def __init__(self, image=48, d=48, blocks=3, cap=0.5, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, d, 8, 8)
        n = (image // 8) ** 2
        self.k = max(1, int(n * cap))
        self.pos = nn.Parameter(0.02 * torch.randn(1, n, d))
        self.routers = nn.ModuleList([nn.Linear(d, 1) for _ in range(blocks)])
        self.blocks = nn.ModuleList([MLPBlock(d) for _ in range(blocks)])
        self.norm, self.head = nn.LayerNorm(d), nn.Linear(d, classes)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2) + self.pos           # B, N, d
        B, N, d = x.shape
        last = len(self.blocks) - 1
        for i, (r, blk) in enumerate(zip(self.routers, self.blocks)):
            score = r(x).squeeze(-1)                                         # B, N
            w, idx = score.topk(self.k, dim=1)
            idx, order = idx.sort(1)
            w = w.gather(1, order)
            ie = idx.unsqueeze(-1).expand(-1, -1, d)
            sel = x.gather(1, ie)
            upd = blk(sel) * torch.sigmoid(w).unsqueeze(-1)
            if i < last:
                x = x.scatter_add(1, ie, upd)
            else:
                bi = torch.arange(B, device=x.device).unsqueeze(1).expand(-1, self.k)
                y = x.clone()
                y[bi, idx] = sel + upd
                x = y
        return self.head(self.norm(x).mean(1))


# ----------------------------------------------------------------------------- ALiBi + rotary

def rope_complex(x, cos, sin):
    """x: B, H, T, hd; rotate pairs (x[2i], x[2i+1]) by complex multiplication."""
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2).contiguous())
    f = torch.complex(cos, sin)                                                # T, hd/2
    return torch.view_as_real(xc * f).flatten(-2)


def rope_roll(x, cos, sin):
    """rotate-half written with torch.roll: x * cos + roll(x, hd/2) * [-1.., +1..] * sin."""
    hd = x.shape[-1]
    sign = torch.cat([-torch.ones(hd // 2, dtype=x.dtype, device=x.device),
                      torch.ones(hd // 2, dtype=x.dtype, device=x.device)])
    c, s = torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    return x * c + torch.roll(x, hd // 2, -1) * sign * s


class AlibiRopeLayer(nn.Module):
    def __init__(self, d, heads, rope):
        super().__init__()
        self.h, self.rope = heads, rope
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d, bias=False), nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate="tanh"), nn.Linear(4 * d, d))

    def forward(self, x, slopes, cos, sin):
        B, T, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, self.h, d // self.h).permute(2, 0, 3, 1, 4)
        q, k = self.rope(q, cos, sin), self.rope(k, cos, sin)
        pos = torch.arange(T, device=x.device)
        dist = (pos.view(1, T) - pos.view(T, 1)).to(x.dtype)                     # j - i
        bias = slopes.view(self.h, 1, 1) * dist
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
        s = (q @ k.transpose(-1, -2)) * (d // self.h) ** -0.5 + bias
        a = torch.softmax(s.masked_fill(mask, float("-inf")), -1)
        x = x + self.o((a @ v).transpose(1, 2).reshape(B, T, d))
        return x + self.ff(self.ln2(x))


class AlibiRope(nn.Module):
    def __init__(self, vocab=256, d=64, heads=4, T=64):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        hd = d // heads
        self.register_buffer("slopes", torch.tensor([2.0 ** (-8.0 * (i + 1) / heads) for i in range(heads)]))
        ang = torch.arange(T, dtype=torch.float32).unsqueeze(1) * (
            10000.0 ** (-torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        self.register_buffer("cos", ang.cos()); self.register_buffer("sin", ang.sin())
        self.layers = nn.ModuleList([AlibiRopeLayer(d, heads, rope_complex), AlibiRopeLayer(d, heads, rope_roll)])
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, ids):
        x = self.emb(ids)
        for l in self.layers:
            x = l(x, self.slopes, self.cos, self.sin)
        return self.head(self.ln(x))


# ----------------------------------------------------------------------------- PointNet++

def fps(xyz, m):
    """Farthest point sampling unrolled: (B, m) int64 indices."""
    B, N, _ = xyz.shape
    dist = torch.full((B, N), 1e10, dtype=xyz.dtype, device=xyz.device)
    far = torch.zeros(B, dtype=torch.int64, device=xyz.device)
    out = []
    for _ in range(m):
        out.append(far)
        c = xyz.gather(1, far.view(B, 1, 1).expand(-1, 1, 3))
        dist = torch.minimum(dist, ((xyz - c) ** 2).sum(-1))
        far = dist.argmax(-1)
    return torch.stack(out, 1)


class SetAbstraction(nn.Module):
    def __init__(self, cin, cout, m, k):
        super().__init__()
        self.m, self.k = m, k
        self.mlp = nn.Sequential(nn.Linear(cin + 3, cout), nn.ReLU(), nn.Linear(cout, cout), nn.ReLU())

    def forward(self, xyz, feat):   # B, N, 3; B, N, C
        B, N, C = feat.shape
        ci = fps(xyz, self.m)                                                      # B, m
        new_xyz = xyz.gather(1, ci.unsqueeze(-1).expand(-1, -1, 3))                # B, m, 3
        _, nn_idx = torch.cdist(new_xyz, xyz).topk(self.k, -1, largest=False)      # B, m, k
        flat = nn_idx.reshape(B, self.m * self.k, 1)
        g_xyz = xyz.gather(1, flat.expand(-1, -1, 3)).view(B, self.m, self.k, 3) - new_xyz.unsqueeze(2)
        g_feat = feat.gather(1, flat.expand(-1, -1, C)).view(B, self.m, self.k, C)
        h = self.mlp(torch.cat([g_xyz, g_feat], -1))                               # B, m, k, cout
        return new_xyz, h.max(2)[0]


class PointNetPP(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(3, 32), nn.ReLU())
        self.sa1 = SetAbstraction(32, 64, 32, 8)
        self.sa2 = SetAbstraction(64, 128, 8, 4)
        self.head = nn.Sequential(nn.Linear(128, 64), nn.ReLU(), nn.Dropout(0.3), nn.Linear(64, classes))

    def forward(self, xyz):
        f = self.embed(xyz)
        xyz, f = self.sa1(xyz, f)
        xyz, f = self.sa2(xyz, f)
        return self.head(f.amax(1))


# ----------------------------------------------------------------------------- CLIP

class CLIP(nn.Module):
    """Image tower (convs, mean pool, projection); text tower (embedding, causal-free conv over the
    tokens, masked mean pooling from ids != 0 plus the EOT token's state picked by argmax of the ids
    and advanced indexing); normalised, logit_scale.exp().clamp(max=100), symmetric cross-entropy."""

    def __init__(self, vocab=128, d=64):
        super().__init__()
        self.img = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.GELU(), nn.Conv2d(32, 64, 3, 2, 1), nn.GELU(),
                                 nn.Conv2d(64, 64, 3, 2, 1))
        self.img_proj = nn.Linear(64, d, bias=False)
        self.tok = nn.Embedding(vocab, 48, padding_idx=0)
        self.txt = nn.Conv1d(48, 64, 3, padding=1)
        self.txt_ln = nn.LayerNorm(64)
        self.txt_proj = nn.Linear(128, d, bias=False)
        self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

    def forward(self, img, ids):
        B = img.shape[0]
        fi = F.normalize(self.img_proj(self.img(img).mean((2, 3))), dim=-1)
        h = self.txt_ln(F.gelu(self.txt(self.tok(ids).transpose(1, 2))).transpose(1, 2))   # B, T, 64
        m = (ids != 0).to(h.dtype).unsqueeze(-1)
        mean = (h * m).sum(1) / m.sum(1).clamp_min(1.0)
        eot = h[torch.arange(B, device=h.device), ids.argmax(-1)]
        ft = F.normalize(self.txt_proj(torch.cat([mean, eot], -1)), dim=-1)
        logits = self.logit_scale.exp().clamp(max=100) * fi @ ft.t()
        labels = torch.arange(B, device=img.device)
        loss = 0.5 * (F.cross_entropy(logits, labels) + F.cross_entropy(logits.t(), labels))
        return loss, logits


# ----------------------------------------------------------------------------- VICReg / Barlow Twins

def off_diagonal(c):
    n = c.shape[0]
    return c.flatten()[:-1].view(n - 1, n + 1)[:, 1:].flatten()


class VICReg(nn.Module):
    """Two views (rot90 and flip of the input plus a fixed noise buffer), a conv backbone applied
    to 4x4 crops (so that the batch of embeddings is 16x the image batch), a projector with
    BatchNorm1d, then VICReg (invariance mse, variance hinge, covariance off-diagonal) and Barlow
    Twins (cross-correlation of batch-normalised embeddings, diagonal to 1, off-diagonal to 0)."""

    def __init__(self, image=32, d=32):
        super().__init__()
        g = torch.Generator(); g.manual_seed(5)
        self.register_buffer("noise", 0.1 * torch.randn(3, image, image, generator=g))
        self.bb = nn.Sequential(nn.Conv2d(3, 32, 3, padding=1), nn.ReLU(), nn.Conv2d(32, 48, 3, 2, 1), nn.ReLU(),
                                nn.AdaptiveAvgPool2d(1), nn.Flatten())
        self.proj = nn.Sequential(nn.Linear(48, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, d))
        self.bn = nn.BatchNorm1d(d, affine=False)

    def embed(self, x):   # B, 3, S, S -> 16 B crops of S/4
        B, C, S, _ = x.shape
        s = S // 4
        crops = x.view(B, C, 4, s, 4, s).permute(0, 2, 4, 1, 3, 5).reshape(B * 16, C, s, s)
        return self.proj(self.bb(crops))

    def forward(self, x):
        v1 = torch.rot90(x, 1, (2, 3))
        v2 = torch.flip(x, (3,)) + self.noise
        z1, z2 = self.embed(v1), self.embed(v2)
        n, d = z1.shape
        inv = F.mse_loss(z1, z2)
        var = 0.0
        cov = 0.0
        for z in (z1, z2):
            zc = z - z.mean(0)
            std = torch.sqrt(zc.var(0) + 1e-4)
            var = var + F.relu(1 - std).mean()
            c = (zc.T @ zc) / (n - 1)
            cov = cov + off_diagonal(c).pow(2).sum() / d
        cc = self.bn(z1).T @ self.bn(z2) / n
        on = torch.diagonal(cc).add(-1).pow(2).sum()
        off = off_diagonal(cc).pow(2).sum()
        return 25.0 * inv + 25.0 * var + cov, on + 0.005 * off


# ----------------------------------------------------------------------------- weight reparametrisations

class WSConv2d(nn.Conv2d):
    """Weight standardisation: the weight minus its mean over (cin, kh, kw), over its std, in forward."""

    def forward(self, x):
        w = self.weight
        m = w.mean((1, 2, 3), keepdim=True)
        v = w.var((1, 2, 3), keepdim=True, unbiased=False)
        return F.conv2d(x, (w - m) / torch.sqrt(v + 1e-5), self.bias, self.stride, self.padding)


class WSBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c1, self.g1 = WSConv2d(c, c, 3, padding=1, bias=False), nn.GroupNorm(8, c)
        self.c2, self.g2 = WSConv2d(c, c, 3, padding=1, bias=False), nn.GroupNorm(8, c)

    def forward(self, x):
        return F.relu(x + self.g2(self.c2(F.relu(self.g1(self.c1(x))))))


class SNLinear(nn.Linear):
    """Spectral norm by hand (nn.utils.spectral_norm's out= normalize does not survive
    torch.jit.trace, which drops no_grad): one power iteration on the detached weight per
    training forward, its u and v buffers written in place with copy_, W / (u^T W v)."""

    def __init__(self, i, o):
        super().__init__(i, o)
        g = torch.Generator(); g.manual_seed(9)
        self.register_buffer("u", F.normalize(torch.randn(o, generator=g), dim=0))
        self.register_buffer("v", F.normalize(torch.randn(i, generator=g), dim=0))

    def forward(self, x):
        w = self.weight
        wd = w.detach()
        v = F.normalize(torch.mv(wd.t(), self.u), dim=0, eps=1e-12)
        u = F.normalize(torch.mv(wd, v), dim=0, eps=1e-12)
        self.u.copy_(u); self.v.copy_(v)
        sigma = torch.dot(u, torch.mv(w, v))
        return F.linear(x, w / sigma, self.bias)


class Reparam(nn.Module):
    """GroupNorm + weight-standardised ResNet blocks, a weight-normed conv (nn.utils.weight_norm:
    _weight_norm of weight_g and weight_v), a spectral-normed Linear (one power iteration per
    training forward writes its u and v buffers in place), a hand weight norm
    (g * v / ||v||) on the head."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.utils.weight_norm(nn.Conv2d(3, 32, 3, 2, 1))
        self.b1, self.b2 = WSBlock(32), WSBlock(32)
        self.down = WSConv2d(32, 64, 3, 2, 1)
        self.gn = nn.GroupNorm(8, 64)
        self.sn = SNLinear(64, 64)
        self.v = nn.Parameter(torch.randn(classes, 64) * 0.1); self.g = nn.Parameter(torch.ones(classes, 1))

    def forward(self, x):
        h = F.relu(self.stem(x))
        h = self.b2(self.b1(h))
        h = F.relu(self.gn(self.down(h))).mean((2, 3))
        h = F.leaky_relu(self.sn(h), 0.2)
        w = self.g * self.v / self.v.norm(dim=1, keepdim=True)
        return F.linear(h, w)


# ----------------------------------------------------------------------------- ESPCN super-resolution

class ESPCN(nn.Module):
    """pixel_unshuffle of the low-resolution image, convs, pixel_shuffle up twice; a ConvTranspose2d
    branch with output_padding; bilinear (align_corners=True) and bicubic upsampled skips mixed
    with torch.addcmul; returns the image and a smooth_l1 loss to the detached bicubic image."""

    def __init__(self, c=32):
        super().__init__()
        self.head = nn.Conv2d(12, c, 3, padding=1)
        self.body = nn.Sequential(nn.Conv2d(c, c, 3, padding=1), nn.PReLU(c), nn.Conv2d(c, c, 3, padding=1))
        self.up1 = nn.Conv2d(c, 4 * c, 3, padding=1)
        self.up2 = nn.Conv2d(c, 4 * 3, 3, padding=1)
        self.tconv = nn.ConvTranspose2d(c, 3, 3, stride=2, padding=1, output_padding=1)
        self.gate = nn.Conv2d(3, 3, 1)

    def forward(self, lr):   # B, 3, S, S -> B, 3, 2S, 2S
        h = F.relu(self.head(F.pixel_unshuffle(lr, 2)))                  # S/2
        h = h + self.body(h)
        u = F.pixel_shuffle(self.up1(h), 2)                              # S, c
        detail = F.pixel_shuffle(self.up2(F.relu(u)), 2)                 # 2S, 3
        t = self.tconv(u)                                                # 2S
        base = F.interpolate(lr, scale_factor=2, mode="bilinear", align_corners=True)
        bic = F.interpolate(lr, scale_factor=2, mode="bicubic", align_corners=False)
        out = torch.addcmul(base, torch.sigmoid(self.gate(t)), detail, value=0.5)
        return out, F.smooth_l1_loss(out, bic.detach(), beta=0.5)


# ----------------------------------------------------------------------------- masked autoencoder

class Block(nn.Module):
    def __init__(self, d, heads=4):
        super().__init__()
        self.inner = MLPBlock(d, heads)

    def forward(self, x):
        return x + self.inner(x)


class MAE(nn.Module):
    """Patchify by reshape/permute, embed + position, random masking (torch.rand noise, argsort,
    argsort of that for the restore order, gather of the kept tokens), encoder; decoder: mask tokens
    expanded and concatenated, unshuffled by gather, position, blocks, prediction; loss on the
    masked patches of per-patch normalised pixels."""

    def __init__(self, image=48, p=8, d=64, dd=48, keep=0.25):
        super().__init__()
        self.p, self.n = p, (image // p) ** 2
        self.keep = max(1, int(self.n * keep))
        self.embed = nn.Linear(3 * p * p, d)
        self.pos = nn.Parameter(0.02 * torch.randn(1, self.n, d))
        self.enc = nn.Sequential(Block(d), Block(d)); self.enc_norm = nn.LayerNorm(d)
        self.to_dec = nn.Linear(d, dd)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, dd))
        self.dpos = nn.Parameter(0.02 * torch.randn(1, self.n, dd))
        self.dec = Block(dd); self.pred = nn.Linear(dd, 3 * p * p)

    def forward(self, img):
        B, C, H, W = img.shape
        p = self.p
        patches = img.view(B, C, H // p, p, W // p, p).permute(0, 2, 4, 3, 5, 1).reshape(B, self.n, p * p * C)
        x = self.embed(patches) + self.pos
        D = x.shape[-1]
        noise = torch.rand(B, self.n, device=img.device)
        shuffle = torch.argsort(noise, 1)
        restore = torch.argsort(shuffle, 1)
        kept = shuffle[:, :self.keep]
        x = x.gather(1, kept.unsqueeze(-1).expand(-1, -1, D))
        mask = torch.ones(B, self.n, dtype=img.dtype, device=img.device)
        mask[:, :self.keep] = 0
        mask = mask.gather(1, restore)
        y = self.to_dec(self.enc_norm(self.enc(x)))
        dd = y.shape[-1]
        y = torch.cat([y, self.mask_token.expand(B, self.n - self.keep, dd)], 1)
        y = y.gather(1, restore.unsqueeze(-1).expand(-1, -1, dd)) + self.dpos
        pred = self.pred(self.dec(y))
        mean = patches.mean(-1, keepdim=True); var = patches.var(-1, keepdim=True)
        target = (patches - mean) / (var + 1e-6) ** 0.5
        loss = ((pred - target) ** 2).mean(-1)
        return (loss * mask).sum() / mask.sum(), pred


# ----------------------------------------------------------------------------- CTC

class CTCModel(nn.Module):
    """A strided Conv1d front end over a (B, F, T) spectrogram, GELU convs, LayerNorm, a Linear
    to the characters, log_softmax, transposed to (T, B, C); F.ctc_loss against int64 target and
    length buffers (zero_infinity)."""

    def __init__(self, batch, feats=16, T=96, vocab=20, L=10):
        super().__init__()
        g = torch.Generator(); g.manual_seed(11)
        self.register_buffer("targets", torch.randint(1, vocab, (batch, L), generator=g))
        self.register_buffer("tlen", torch.randint(L // 2, L + 1, (batch,), generator=g))
        self.register_buffer("ilen", torch.full((batch,), T // 2, dtype=torch.int64))
        self.c1 = nn.Conv1d(feats, 64, 5, stride=2, padding=2)
        self.c2 = nn.Conv1d(64, 64, 3, padding=1, groups=4)
        self.c3 = nn.Conv1d(64, 64, 3, padding=2, dilation=2)
        self.ln = nn.LayerNorm(64)
        self.out = nn.Linear(64, vocab)

    def forward(self, spec):
        h = F.gelu(self.c1(spec))
        h = h + F.gelu(self.c2(h))
        h = h + F.gelu(self.c3(h))
        lp = F.log_softmax(self.out(self.ln(h.transpose(1, 2))), -1).transpose(0, 1)   # T, B, C
        loss = F.ctc_loss(lp, self.targets, self.ilen, self.tlen, blank=0, reduction="mean", zero_infinity=True)
        return loss, lp


# ----------------------------------------------------------------------------- Transformer-XL memory

class XLLayer(nn.Module):
    """Attention of a segment over [memory.detach(); segment] with baddbmm scores whose bias is a
    parameter table indexed by a relative-position buffer, a causal mask shifted by the memory
    length (triu with diagonal M+1), an addmm feed-forward, an addcmul gate."""

    def __init__(self, d, T, M):
        super().__init__()
        self.d, self.T, self.M = d, T, M
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.q, self.kv, self.o = nn.Linear(d, d), nn.Linear(d, 2 * d), nn.Linear(d, d)
        self.rel = nn.Parameter(torch.zeros(T + M))
        i = torch.arange(T).unsqueeze(1) + M
        j = torch.arange(T + M).unsqueeze(0)
        self.register_buffer("ridx", (i - j).clamp(0, T + M - 1))
        self.w1 = nn.Parameter(torch.randn(4 * d, d) / math.sqrt(d)); self.b1 = nn.Parameter(torch.zeros(4 * d))
        self.w2 = nn.Parameter(torch.randn(d, 4 * d) / math.sqrt(4 * d)); self.b2 = nn.Parameter(torch.zeros(d))
        self.gate = nn.Linear(d, d)

    def forward(self, x, mem):   # B, T, d; B, M, d
        B, T, d = x.shape
        h = self.ln1(x)
        q = self.q(h)
        k, v = self.kv(torch.cat([mem.detach(), h], 1)).chunk(2, -1)
        bias = self.rel[self.ridx].unsqueeze(0).expand(B, -1, -1)
        s = torch.baddbmm(bias, q, k.transpose(1, 2), beta=1.0, alpha=1.0 / math.sqrt(d))
        mask = torch.ones(T, T + self.M, dtype=torch.bool, device=x.device).triu(self.M + 1)
        a = torch.softmax(s.masked_fill(mask, float("-inf")), -1)
        x = x + self.o(torch.bmm(a, v))
        h2 = self.ln2(x).reshape(B * T, d)
        f = torch.addmm(self.b2, F.relu(torch.addmm(self.b1, h2, self.w1.t())), self.w2.t()).view(B, T, d)
        return torch.addcmul(x, torch.sigmoid(self.gate(x)), f)


class TransformerXL(nn.Module):
    def __init__(self, vocab=256, d=48, T=32, layers=2):
        super().__init__()
        self.T = T
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([XLLayer(d, T, T) for _ in range(layers)])
        self.head = nn.Linear(d, vocab)

    def forward(self, ids):   # B, 2T
        B = ids.shape[0]
        segs = ids.split(self.T, 1)
        mems = [torch.zeros(B, self.T, self.emb.embedding_dim, device=ids.device) for _ in self.layers]
        outs = []
        for s in segs:
            x = self.emb(s)
            new = []
            for l, m in zip(self.layers, mems):
                new.append(x)
                x = l(x, m)
            mems = new
            outs.append(self.head(x))
        return torch.cat(outs, 1)


# ----------------------------------------------------------------------------- AdaIN

class AdaIN(nn.Module):
    """A frozen conv encoder (requires_grad False) of a content and a style image; AdaIN (content
    normalised by its spatial mean/std, scaled by the style's); a decoder with ReflectionPad2d,
    InstanceNorm2d(affine) and nearest upsampling; the output re-encoded; content loss, style loss
    on mean/std and on Gram matrices (bmm), and a consistency loss to a no-grad EMA-teacher decoder
    whose weights are buffers; weighted and summed."""

    def __init__(self):
        super().__init__()
        self.e1 = nn.Conv2d(3, 16, 3, padding=1); self.e2 = nn.Conv2d(16, 32, 3, 2, 1)
        for p in list(self.e1.parameters()) + list(self.e2.parameters()):
            p.requires_grad_(False)
        self.dec = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(32, 16, 3), nn.InstanceNorm2d(16, affine=True),
                                 nn.ReLU(), nn.Upsample(scale_factor=2, mode="nearest"),
                                 nn.ReflectionPad2d(1), nn.Conv2d(16, 3, 3))
        self.register_buffer("t_w1", self.dec[1].weight.detach().clone() * 0.9)
        self.register_buffer("t_b1", self.dec[1].bias.detach().clone())
        self.register_buffer("t_w2", self.dec[6].weight.detach().clone() * 0.9)

    def enc(self, x):
        f1 = F.relu(self.e1(x))
        return f1, F.relu(self.e2(f1))

    @staticmethod
    def stats(f, eps=1e-5):
        return f.mean((2, 3), keepdim=True), (f.var((2, 3), keepdim=True) + eps).sqrt()

    @staticmethod
    def gram(f):
        B, C, H, W = f.shape
        f = f.flatten(2)
        return torch.bmm(f, f.transpose(1, 2)) / (C * H * W)

    def teacher(self, t):
        h = F.conv2d(F.pad(t, (1, 1, 1, 1), mode="reflect"), self.t_w1, self.t_b1)
        h = F.interpolate(F.relu(F.instance_norm(h)), scale_factor=2, mode="nearest")
        return F.conv2d(F.pad(h, (1, 1, 1, 1), mode="reflect"), self.t_w2)

    def forward(self, content, style):
        _, fc = self.enc(content)
        s1, fs = self.enc(style)
        cm, cs = self.stats(fc)
        sm, ss = self.stats(fs)
        t = (fc - cm) / cs * ss + sm
        out = self.dec(t)
        o1, fo = self.enc(out)
        lc = F.mse_loss(fo, t)
        om, os_ = self.stats(fo)
        ls = F.mse_loss(om, sm) + F.mse_loss(os_, ss) + F.mse_loss(self.gram(o1), self.gram(s1))
        with torch.no_grad():
            tout = self.teacher(t)
        lt = F.l1_loss(out, tout)
        return 1.0 * lc + 10.0 * ls + 0.1 * lt, out


# ----------------------------------------------------------------------------- fake quantisation

def round_ste(x):
    return x + (torch.round(x) - x).detach()


def grad_scale(s, g):
    return (s - s * g).detach() + s * g


class QConv(nn.Conv2d):
    """Per-channel symmetric int8 weights (scale from a detached amax) and LSQ unsigned activations
    (a learned step with its gradient scaled by 1/sqrt(N * Qp)), both with the straight-through round."""

    def __init__(self, *a, **k):
        super().__init__(*a, **k)
        self.step = nn.Parameter(torch.tensor(0.05))

    def forward(self, x):
        s = grad_scale(self.step, 1.0 / math.sqrt(x[0].numel() * 255))
        xq = round_ste(torch.clamp(x / s, 0, 255)) * s
        w = self.weight
        ws = (w.abs().amax((1, 2, 3), keepdim=True) / 127).detach().clamp_min(1e-8)
        wq = round_ste(torch.clamp(w / ws, -128, 127)) * ws
        return F.conv2d(xq, wq, self.bias, self.stride, self.padding)


class FakeQuant(nn.Module):
    """QConvs; a per-group gain parameter repeat_interleave-d over the channels; local 3x3 window
    attention by F.unfold (query = centre pixel, keys and values its 9 neighbours); a Linear on
    overlapping 4x4 patches folded back by F.fold and divided by fold(ones); a torch.flip mix;
    logits with a class mask of -inf, a hand-written log-sum-exp (detached max, nan_to_num), NLL
    against an int64 buffer plus an entropy term."""

    def __init__(self, batch, classes=10):
        super().__init__()
        g = torch.Generator(); g.manual_seed(3)
        self.register_buffer("target", torch.randint(0, classes - 2, (batch,), generator=g))
        cm = torch.zeros(classes, dtype=torch.bool); cm[-2:] = True
        self.register_buffer("cmask", cm)
        self.c1 = nn.Conv2d(3, 32, 3, 2, 1)
        self.q1 = QConv(32, 32, 3, padding=1); self.q2 = QConv(32, 32, 3, 2, 1)
        self.gain = nn.Parameter(torch.ones(8))
        self.qk = nn.Conv2d(32, 64, 1)
        self.patch = nn.Linear(32 * 16, 32 * 16)
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        h = F.relu(self.c1(x))
        h = F.relu(self.q1(h)) * self.gain.repeat_interleave(4).view(1, 32, 1, 1)
        h = F.relu(self.q2(h))                                                     # B, 32, S, S
        B, C, H, W = h.shape
        q, kv = self.qk(h).split([32, 32], 1)
        win = F.unfold(kv, 3, padding=1).view(B, C, 9, H * W)
        a = torch.softmax((q.view(B, C, 1, H * W) * win).sum(1, keepdim=True) / math.sqrt(C), 2)
        h = h + (a * win).sum(2).view(B, C, H, W)
        pt = F.unfold(h, 4, stride=2)                                              # B, C*16, L
        y = self.patch(pt.transpose(1, 2)).transpose(1, 2)
        norm = F.fold(torch.ones_like(pt), (H, W), 4, stride=2)
        h = h + F.fold(y, (H, W), 4, stride=2) / norm
        h = 0.5 * (h + torch.flip(h, (3,)))
        logits = self.head(h.mean((2, 3))).masked_fill(self.cmask, float("-inf"))
        m = torch.nan_to_num(logits.amax(-1, keepdim=True).detach(), neginf=0.0)
        lse = m + torch.log(torch.exp(logits - m).sum(-1, keepdim=True))
        logp = logits - lse
        nll = -logp.gather(1, self.target.unsqueeze(1)).mean()
        p = logp.exp()
        ent = -(p * torch.nan_to_num(logp, neginf=0.0)).sum(-1).mean()
        return nll + 0.1 * ent, logp.masked_fill(self.cmask, 0.0)


NAMES = ["mamba", "rwkv", "mod", "alibi_rope", "pointnetpp", "clip", "vicreg", "reparam", "espcn", "mae", "ctc",
         "txl", "adain", "fakequant"]


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    half = max(16, (S // 2) // 16 * 16)     # 48 at the default --image 96
    if name == "mamba":
        return Mamba(), [common.token_ids((B, 16), 256, g)]
    if name == "rwkv":
        return RWKV(), [common.token_ids((B, 12), 256, g)]
    if name == "mod":
        return MoD(half), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "alibi_rope":
        return AlibiRope(), [common.token_ids((B, 64), 256, g)]
    if name == "pointnetpp":
        return PointNetPP(), [common.float_input((B, 256, 3), dtype, g)]
    if name == "clip":
        ids = common.token_ids((B, 16), 128, g)
        ids[:, 12:] = 0
        return CLIP(), [common.float_input((B, 3, half, half), dtype, g), ids]
    if name == "vicreg":
        return VICReg(32), [common.float_input((B, 3, 32, 32), dtype, g)]
    if name == "reparam":
        return Reparam(), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "espcn":
        return ESPCN(), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "mae":
        return MAE(half), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "ctc":
        return CTCModel(B), [common.float_input((B, 16, 96), dtype, g)]
    if name == "txl":
        return TransformerXL(), [common.token_ids((B, 64), 256, g)]
    if name == "adain":
        return AdaIN(), [common.float_input((B, 3, 32, 32), dtype, g), common.float_input((B, 3, 32, 32), dtype, g)]
    if name == "fakequant":
        return FakeQuant(B), [common.float_input((B, 3, half, half), dtype, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen5.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
