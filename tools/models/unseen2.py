#!/usr/bin/env python3
"""unseen2.py — a second set of models nobody tuned rkmate for (after
tools/models/unseen.py; none of them was looked at while rkmate was written),
all small and hand-written, each with idioms that zoo.py, unseen.py and
coverage.py do not have: a Llama (hand-written RMSNorm, rotary embeddings from
cos/sin buffers on strided slices, SwiGLU, causal scaled_dot_product_attention,
tied head), a Fourier neural operator (rfft2 / irfft2 with s=, view_as_complex
weights, complex einsum on a slice written into zeros), a VAE
(reparameterisation with randn_like, a tuple output), PointNet (a T-Net with an
identity buffer and bmm, Conv1d / BatchNorm1d, max with indices used by
gather), a TCN (weight_norm parametrizations, F.pad causal dilated Conv1d,
tanh GELU), SE-ResNeXt (grouped conv, hardsigmoid excitation, Mish, channel
shuffle, stochastic depth with a torch.rand mask), a C3D (BatchNorm3d,
MaxPool3d / AvgPool3d, trilinear interpolate, AdaptiveMaxPool3d), a DCGAN
generator then discriminator (in-place ReLU / LeakyReLU after BatchNorm,
ConvTranspose2d), a spatial transformer (affine_grid, grid_sample), a
message-passing GNN (int64 edge buffers, index_select, out-of-place index_add
scatter), a Perceiver (nn.MultiheadAttention with kdim/vdim and averaged
attention weights as an output, norm_first encoder layers), a GRU seq2seq with
attention (bidirectional 2-layer encoder, teacher forcing, log_softmax), a
MobileViT block (F.unfold / F.fold) and a CapsNet (vector_norm squash,
dynamic routing unrolled, detached predictions).  Exported like the zoo
(tools/models/common.export), with the zoo's options, so that
`tools/bench/zoo.py --models-script tools/models/unseen2.py` runs them
through the same bench.

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


class RMSNorm(nn.Module):
    """Hand-written RMSNorm: x * rsqrt(mean(x^2) + eps) * weight."""

    def __init__(self, dim, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim)); self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope(x, cos, sin):
    """Rotary embedding on interleaved pairs: strided slices, stack, flatten."""
    x1, x2 = x[..., ::2], x[..., 1::2]
    return torch.stack([x1 * cos - x2 * sin, x1 * sin + x2 * cos], -1).flatten(-2)


class Llama(nn.Module):
    """Token embedding, pre-norm blocks with hand-written RMSNorm, rotary position embeddings
    (cos/sin buffers, strided slices), causal F.scaled_dot_product_attention, SwiGLU MLP
    (one Linear, chunk, silu * gate), head tied to the embedding."""

    def __init__(self, vocab=256, dim=128, layers=3, heads=4, seq=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim); self.heads = heads; hd = dim // heads
        self.blocks = nn.ModuleList([nn.ModuleDict(dict(
            n1=RMSNorm(dim), qkv=nn.Linear(dim, 3 * dim, bias=False), o=nn.Linear(dim, dim, bias=False),
            n2=RMSNorm(dim), up=nn.Linear(dim, 2 * 2 * dim, bias=False), down=nn.Linear(2 * dim, dim, bias=False)))
            for _ in range(layers)])
        self.norm = RMSNorm(dim)
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        ang = torch.arange(seq, dtype=torch.float32)[:, None] * inv[None, :]     # seq, hd/2
        self.register_buffer("cos", ang.cos()); self.register_buffer("sin", ang.sin())

    def forward(self, t):
        B, T = t.shape
        x = self.tok(t)
        cos, sin = self.cos[:T], self.sin[:T]
        for b in self.blocks:
            q, k, v = b["qkv"](b["n1"](x)).view(B, T, 3, self.heads, -1).permute(2, 0, 3, 1, 4).unbind(0)
            q, k = rope(q, cos, sin), rope(k, cos, sin)
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + b["o"](a.transpose(1, 2).reshape(B, T, -1))
            g, u = b["up"](b["n2"](x)).chunk(2, -1)
            x = x + b["down"](F.silu(g) * u)
        return F.linear(self.norm(x), self.tok.weight)


class SpectralConv2d(nn.Module):
    """rfft2, the lowest modes times a complex weight (view_as_complex of a real (..., 2) parameter,
    einsum), written into a complex zeros tensor, irfft2 with s=."""

    def __init__(self, cin, cout, m1, m2):
        super().__init__()
        scale = 1.0 / (cin * cout)
        self.w1 = nn.Parameter(scale * torch.randn(cin, cout, m1, m2, 2))
        self.w2 = nn.Parameter(scale * torch.randn(cin, cout, m1, m2, 2))
        self.cout, self.m1, self.m2 = cout, m1, m2

    def forward(self, x):
        B, _, H, W = x.shape
        xf = torch.fft.rfft2(x)
        out = torch.zeros(B, self.cout, H, W // 2 + 1, dtype=xf.dtype, device=x.device)
        m1, m2 = self.m1, self.m2
        out[:, :, :m1, :m2] = torch.einsum("bixy,ioxy->boxy", xf[:, :, :m1, :m2], torch.view_as_complex(self.w1))
        out[:, :, -m1:, :m2] = torch.einsum("bixy,ioxy->boxy", xf[:, :, -m1:, :m2], torch.view_as_complex(self.w2))
        return torch.fft.irfft2(out, s=(H, W))


class FNO(nn.Module):
    """Fourier neural operator: 1x1 conv lifting, 2 Fourier layers (spectral conv + 1x1 conv, GELU),
    1x1 conv projection."""

    def __init__(self, width=24, modes=8):
        super().__init__()
        self.lift = nn.Conv2d(3, width, 1)
        self.spec = nn.ModuleList([SpectralConv2d(width, width, modes, modes) for _ in range(2)])
        self.pw = nn.ModuleList([nn.Conv2d(width, width, 1) for _ in range(2)])
        self.proj = nn.Sequential(nn.Conv2d(width, 64, 1), nn.GELU(), nn.Conv2d(64, 1, 1))

    def forward(self, x):
        x = self.lift(x)
        for s, w in zip(self.spec, self.pw):
            x = F.gelu(s(x) + w(x))
        return self.proj(x)


class VAE(nn.Module):
    """Stride-2 conv encoder, mu / logvar Linear heads, z = mu + exp(0.5 logvar) * randn_like(mu),
    Linear + ConvTranspose2d decoder with sigmoid; returns (recon, mu, logvar)."""

    def __init__(self, image=96, latent=32):
        super().__init__()
        self.s = s = image // 8
        self.enc = nn.Sequential(nn.Conv2d(3, 16, 4, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 4, 2, 1), nn.ReLU(),
                                 nn.Conv2d(32, 32, 4, 2, 1), nn.ReLU(), nn.Flatten())
        self.mu = nn.Linear(32 * s * s, latent); self.logvar = nn.Linear(32 * s * s, latent)
        self.fc = nn.Linear(latent, 32 * s * s)
        self.dec = nn.Sequential(nn.ConvTranspose2d(32, 32, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(32, 16, 4, 2, 1),
                                 nn.ReLU(), nn.ConvTranspose2d(16, 3, 4, 2, 1), nn.Sigmoid())

    def forward(self, x):
        h = self.enc(x)
        mu, logvar = self.mu(h), self.logvar(h)
        z = mu + torch.exp(0.5 * logvar) * torch.randn_like(mu)
        recon = self.dec(self.fc(z).view(-1, 32, self.s, self.s))
        return recon, mu, logvar


class TNet(nn.Module):
    """PointNet's input transform: Conv1d 1x1 + BatchNorm1d + ReLU, max over points, Linear to 9
    plus an identity buffer."""

    def __init__(self, k=3):
        super().__init__()
        self.k = k
        self.mlp = nn.Sequential(nn.Conv1d(k, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
                                 nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU())
        self.fc = nn.Sequential(nn.Linear(128, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Linear(64, k * k))
        self.register_buffer("iden", torch.eye(k).flatten())

    def forward(self, x):
        g = torch.max(self.mlp(x), 2)[0]
        return (self.fc(g) + self.iden).view(-1, self.k, self.k)


class PointNet(nn.Module):
    """T-Net transform applied with bmm, shared Conv1d 1x1 + BatchNorm1d MLP, global max with
    indices (the critical points gathered from the input), classifier head with Dropout."""

    def __init__(self, classes=10):
        super().__init__()
        self.tnet = TNet(3)
        self.mlp = nn.Sequential(nn.Conv1d(3, 64, 1), nn.BatchNorm1d(64), nn.ReLU(),
                                 nn.Conv1d(64, 128, 1), nn.BatchNorm1d(128), nn.ReLU(),
                                 nn.Conv1d(128, 256, 1), nn.BatchNorm1d(256))
        self.head = nn.Sequential(nn.Linear(256 + 3, 128), nn.BatchNorm1d(128), nn.ReLU(), nn.Dropout(0.3),
                                  nn.Linear(128, classes))

    def forward(self, pts):   # B, 3, N
        t = self.tnet(pts)
        x = torch.bmm(pts.transpose(1, 2), t).transpose(1, 2)
        values, idx = self.mlp(x).max(dim=2)                                  # B, 256
        crit = torch.gather(x, 2, idx.unsqueeze(1).expand(-1, 3, -1)).mean(2)   # B, 3
        return self.head(torch.cat([values, crit], 1))


class TemporalBlock(nn.Module):
    """Two weight-normed dilated causal Conv1d (F.pad on the left), tanh GELU, Dropout, a residual
    with a 1x1 conv where the channels change."""

    def __init__(self, cin, cout, dilation, k=3):
        super().__init__()
        wn = nn.utils.parametrizations.weight_norm
        self.c1 = wn(nn.Conv1d(cin, cout, k, dilation=dilation))
        self.c2 = wn(nn.Conv1d(cout, cout, k, dilation=dilation))
        self.pad = (k - 1) * dilation
        self.act = nn.GELU(approximate="tanh"); self.drop = nn.Dropout(0.1)
        self.res = nn.Conv1d(cin, cout, 1) if cin != cout else nn.Identity()

    def forward(self, x):
        y = self.drop(self.act(self.c1(F.pad(x, (self.pad, 0)))))
        y = self.drop(self.act(self.c2(F.pad(y, (self.pad, 0)))))
        return self.act(y + self.res(x))


class TCN(nn.Module):
    """Temporal convolutional network: dilations 1, 2, 4, 8, head on the last step."""

    def __init__(self, cin=16, classes=10):
        super().__init__()
        chans = [cin, 32, 32, 64, 64]
        self.blocks = nn.Sequential(*[TemporalBlock(chans[i], chans[i + 1], 2 ** i) for i in range(4)])
        self.head = nn.Linear(64, classes)

    def forward(self, x):   # B, 16, T
        return self.head(self.blocks(x)[:, :, -1])


def channel_shuffle(x, groups):
    B, C, H, W = x.shape
    return x.view(B, groups, C // groups, H, W).transpose(1, 2).reshape(B, C, H, W)


class SEXBlock(nn.Module):
    """ResNeXt bottleneck: grouped 3x3 conv (groups=8), BatchNorm, Mish, channel shuffle,
    squeeze-excitation (adaptive_avg_pool2d, 1x1 convs, hardsigmoid, mul), stochastic depth."""

    def __init__(self, cin, cout, stride, width=64, groups=8, drop=0.2):
        super().__init__()
        self.groups, self.keep = groups, 1.0 - drop
        self.c1 = nn.Conv2d(cin, width, 1, bias=False); self.b1 = nn.BatchNorm2d(width)
        self.c2 = nn.Conv2d(width, width, 3, stride, 1, groups=groups, bias=False); self.b2 = nn.BatchNorm2d(width)
        self.c3 = nn.Conv2d(width, cout, 1, bias=False); self.b3 = nn.BatchNorm2d(cout)
        self.se1 = nn.Conv2d(cout, cout // 8, 1); self.se2 = nn.Conv2d(cout // 8, cout, 1)
        self.short = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                      if stride != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        y = F.mish(self.b1(self.c1(x)))
        y = channel_shuffle(F.mish(self.b2(self.c2(y))), self.groups)
        y = self.b3(self.c3(y))
        s = F.hardsigmoid(self.se2(F.relu(self.se1(F.adaptive_avg_pool2d(y, 1)))))
        y = y * s
        if self.training:   # a Python flag, not data: the trace keeps the train-mode branch
            mask = (torch.rand(y.shape[0], 1, 1, 1, dtype=y.dtype, device=y.device) < self.keep).to(y.dtype)
            y = y * mask / self.keep
        return F.mish(y + self.short(x))


class SEResNeXt(nn.Module):
    """Conv stem, three SE-ResNeXt blocks, global pool head."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.Mish())
        self.blocks = nn.Sequential(SEXBlock(32, 128, 1), SEXBlock(128, 128, 2), SEXBlock(128, 256, 2, width=128))
        self.head = nn.Linear(256, classes)

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1).flatten(1))


class C3D(nn.Module):
    """Conv3d + BatchNorm3d + ReLU, MaxPool3d, AvgPool3d, trilinear F.interpolate back up onto a skip,
    AdaptiveMaxPool3d head."""

    def __init__(self, classes=10):
        super().__init__()
        def cbr(i, o):
            return nn.Sequential(nn.Conv3d(i, o, 3, padding=1, bias=False), nn.BatchNorm3d(o), nn.ReLU())
        self.b1, self.b2, self.b3 = cbr(3, 16), cbr(16, 32), cbr(32, 64)
        self.p1 = nn.MaxPool3d((1, 2, 2)); self.p2 = nn.MaxPool3d(2); self.p3 = nn.AvgPool3d(2)
        self.red = nn.Conv3d(64, 32, 1)
        self.pool = nn.AdaptiveMaxPool3d(1); self.head = nn.Linear(32, classes)

    def forward(self, x):   # B, 3, 8, 32, 32
        a = self.p2(self.b2(self.p1(self.b1(x))))          # B, 32, 4, 8, 8
        b = self.red(self.p3(self.b3(a)))                    # B, 32, 2, 4, 4
        u = F.interpolate(b, scale_factor=2, mode="trilinear", align_corners=False)
        return self.head(self.pool(a + u).flatten(1))


class DCGAN(nn.Module):
    """DCGAN generator (ConvTranspose2d, BatchNorm, ReLU(inplace=True), Tanh) from a (B, 64, 1, 1)
    latent to 32x32 images, then the discriminator (stride-2 Conv2d, BatchNorm,
    LeakyReLU(0.2, inplace=True)) whose scores are the output."""

    def __init__(self, nz=64, g=32, d=32):
        super().__init__()
        self.G = nn.Sequential(
            nn.ConvTranspose2d(nz, g * 4, 4, 1, 0, bias=False), nn.BatchNorm2d(g * 4), nn.ReLU(True),
            nn.ConvTranspose2d(g * 4, g * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(g * 2), nn.ReLU(True),
            nn.ConvTranspose2d(g * 2, g, 4, 2, 1, bias=False), nn.BatchNorm2d(g), nn.ReLU(True),
            nn.ConvTranspose2d(g, 3, 4, 2, 1, bias=False), nn.Tanh())
        self.D = nn.Sequential(
            nn.Conv2d(3, d, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(d, d * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(d * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(d * 2, d * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(d * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(d * 4, 1, 4, 1, 0, bias=False))

    def forward(self, z):
        return self.D(self.G(z)).view(-1)


class STN(nn.Module):
    """Spatial transformer: localisation conv net, Linear to 6, view(-1, 2, 3), F.affine_grid,
    F.grid_sample (bilinear, border padding) of the input, then a small CNN classifier."""

    def __init__(self, classes=10):
        super().__init__()
        self.loc = nn.Sequential(nn.Conv2d(3, 8, 7, 2), nn.MaxPool2d(2), nn.ReLU(True),
                                 nn.Conv2d(8, 10, 5), nn.MaxPool2d(2), nn.ReLU(True), nn.AdaptiveAvgPool2d(3))
        self.fc = nn.Sequential(nn.Linear(90, 32), nn.ReLU(True), nn.Linear(32, 6))
        # near-identity start (the tutorial zeroes the weight; small random keeps the loc net's gradients non-zero)
        nn.init.normal_(self.fc[2].weight, std=0.01)
        with torch.no_grad():
            self.fc[2].bias.copy_(torch.tensor([1.0, 0, 0, 0, 1.0, 0]))
        self.cnn = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, classes))

    def forward(self, x):
        theta = self.fc(self.loc(x).flatten(1)).view(-1, 2, 3)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        x = F.grid_sample(x, grid, mode="bilinear", padding_mode="border", align_corners=False)
        return self.cnn(x)


class GNN(nn.Module):
    """3-layer message passing on a fixed random graph: int64 edge_index / batch-id buffers, messages
    Linear(x)[src] by index_select, sum by out-of-place index_add into zeros, degree normalisation
    buffer, LayerNorm, ReLU, per-graph mean pool by index_add, head."""

    def __init__(self, graphs=4, nodes=16, edges=48, din=32, hid=64, classes=5):
        super().__init__()
        g = torch.Generator(); g.manual_seed(12345)   # the graph does not depend on --seed
        src, dst = [], []
        for i in range(graphs):
            src.append(torch.randint(0, nodes, (edges,), generator=g) + i * nodes)
            dst.append(torch.randint(0, nodes, (edges,), generator=g) + i * nodes)
        ei = torch.stack([torch.cat(src), torch.cat(dst)])
        n = graphs * nodes
        self.register_buffer("edge_index", ei)
        deg = torch.bincount(ei[1], minlength=n).clamp(min=1).to(torch.float32)
        self.register_buffer("inv_deg", (1.0 / deg)[:, None])
        self.register_buffer("batch_id", torch.arange(graphs).repeat_interleave(nodes))
        self.register_buffer("inv_count", torch.full((graphs, 1), 1.0 / nodes))
        self.graphs = graphs
        dims = [din, hid, hid, hid]
        self.msg = nn.ModuleList([nn.Linear(dims[i], dims[i + 1]) for i in range(3)])
        self.root = nn.ModuleList([nn.Linear(dims[i], dims[i + 1], bias=False) for i in range(3)])
        self.norm = nn.ModuleList([nn.LayerNorm(hid) for _ in range(3)])
        self.head = nn.Sequential(nn.Linear(hid, hid), nn.ReLU(), nn.Linear(hid, classes))

    def forward(self, x):   # graphs*nodes, din
        src, dst = self.edge_index[0], self.edge_index[1]
        for m, r, ln in zip(self.msg, self.root, self.norm):
            msg = m(x).index_select(0, src)
            agg = torch.zeros(x.shape[0], msg.shape[1], dtype=x.dtype, device=x.device).index_add(0, dst, msg)
            x = F.relu(ln(agg * self.inv_deg + r(x)))
        pooled = torch.zeros(self.graphs, x.shape[1], dtype=x.dtype, device=x.device).index_add(0, self.batch_id, x)
        return self.head(pooled * self.inv_count)


class Perceiver(nn.Module):
    """A latent array parameter expanded to the batch, nn.MultiheadAttention cross-attention with
    kdim/vdim != embed_dim and need_weights=True (averaged), 2 norm_first GELU
    nn.TransformerEncoderLayer over the latents; returns (logits, cross-attention weights)."""

    def __init__(self, din=48, dim=64, latents=16, heads=4, classes=10):
        super().__init__()
        self.latent = nn.Parameter(0.02 * torch.randn(latents, dim))
        self.ln_x = nn.LayerNorm(din); self.ln_q = nn.LayerNorm(dim)
        self.cross = nn.MultiheadAttention(dim, heads, dropout=0.1, kdim=din, vdim=din, batch_first=True)
        self.mlp = nn.Sequential(nn.LayerNorm(dim), nn.Linear(dim, 2 * dim), nn.GELU(), nn.Linear(2 * dim, dim))
        self.self_attn = nn.ModuleList([nn.TransformerEncoderLayer(dim, heads, 2 * dim, dropout=0.1, activation="gelu",
                                                                   batch_first=True, norm_first=True)
                                        for _ in range(2)])
        self.ln = nn.LayerNorm(dim); self.head = nn.Linear(dim, classes)

    def forward(self, x):   # B, L, din
        lat = self.latent.unsqueeze(0).expand(x.shape[0], -1, -1)
        kv = self.ln_x(x)
        a, w = self.cross(self.ln_q(lat), kv, kv, need_weights=True, average_attn_weights=True)
        lat = lat + a
        lat = lat + self.mlp(lat)
        for layer in self.self_attn:
            lat = layer(lat)
        return self.head(self.ln(lat).mean(1)), w


class Seq2Seq(nn.Module):
    """2-layer bidirectional nn.GRU encoder, 1-layer nn.GRU decoder on teacher-forced target tokens
    (a second int64 input) started from the encoder's final states (Linear + tanh), dot-product
    attention (bmm, softmax), concat, Linear, log_softmax."""

    def __init__(self, vocab=100, emb=32, enc=48, dec=64):
        super().__init__()
        self.src_emb = nn.Embedding(vocab, emb); self.tgt_emb = nn.Embedding(vocab, emb)
        self.enc = nn.GRU(emb, enc, num_layers=2, bidirectional=True, batch_first=True, dropout=0.1)
        self.bridge = nn.Linear(2 * enc, dec)
        self.dec = nn.GRU(emb, dec, batch_first=True)
        self.key = nn.Linear(2 * enc, dec, bias=False)
        self.comb = nn.Linear(dec + 2 * enc, dec); self.out = nn.Linear(dec, vocab)

    def forward(self, src, tgt):
        eo, h = self.enc(self.src_emb(src))                              # B,S,2enc; 4,B,enc
        h0 = torch.tanh(self.bridge(torch.cat([h[-2], h[-1]], 1))).unsqueeze(0)
        do, _ = self.dec(self.tgt_emb(tgt), h0)                          # B,T,dec
        att = torch.bmm(do, self.key(eo).transpose(1, 2)).softmax(-1)    # B,T,S
        ctx = torch.bmm(att, eo)
        y = torch.tanh(self.comb(torch.cat([do, ctx], -1)))
        return F.log_softmax(self.out(y), -1)


class MobileViTBlock(nn.Module):
    """Local 3x3 + 1x1 conv, F.unfold into 2x2 patches, reshape to sequences (one per position within a
    patch), 2 transformer layers, reshape back, F.fold, 1x1 conv, cat with the input, fuse conv."""

    def __init__(self, c=32, d=48, p=2):
        super().__init__()
        self.p = p
        self.local = nn.Sequential(nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.SiLU(),
                                   nn.Conv2d(c, d, 1, bias=False))
        self.tf = nn.ModuleList([nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.1, activation=F.silu,
                                                            batch_first=True, norm_first=True) for _ in range(2)])
        self.ln = nn.LayerNorm(d)
        self.proj = nn.Sequential(nn.Conv2d(d, c, 1, bias=False), nn.BatchNorm2d(c), nn.SiLU())
        self.fuse = nn.Sequential(nn.Conv2d(2 * c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.SiLU())

    def forward(self, x):
        B, _, H, W = x.shape
        p = self.p
        y = self.local(x)
        d = y.shape[1]
        u = F.unfold(y, p, stride=p)                                     # B, d*p*p, P
        n = u.shape[-1]
        s = u.view(B, d, p * p, n).permute(0, 2, 3, 1).reshape(B * p * p, n, d)
        for layer in self.tf:
            s = layer(s)
        s = self.ln(s)
        u = s.view(B, p * p, n, d).permute(0, 3, 1, 2).reshape(B, d * p * p, n)
        y = F.fold(u, (H, W), p, stride=p)
        return self.fuse(torch.cat([x, self.proj(y)], 1))


class MobileViT(nn.Module):
    """Conv stem (two stride-2 conv/BN/SiLU), a MobileViT block, global pool head."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.SiLU(),
                                  nn.Conv2d(16, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.SiLU())
        self.block = MobileViTBlock(32, 48)
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.block(self.stem(x)), 1).flatten(1))


def squash(s, eps=1e-8):
    n = torch.linalg.vector_norm(s, dim=-1, keepdim=True)
    n2 = n * n
    return s * n2 / (1 + n2) / (n + eps)


class CapsNet(nn.Module):
    """Primary capsules from a conv (reshape to (B, n, 8)), squash with torch.linalg.vector_norm,
    prediction vectors by einsum with a (n_in, n_out, 16, 8) weight, dynamic routing unrolled 3
    iterations (softmax over outputs, out-of-place logit updates, detached predictions before the
    last), output capsule lengths."""

    def __init__(self, classes=10, iters=3):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 64, 9)                      # 28 -> 20
        self.prim = nn.Conv2d(64, 16 * 8, 9, stride=2)        # 20 -> 6: 16 capsule maps of dim 8
        n_in = 16 * 6 * 6
        self.W = nn.Parameter(0.05 * torch.randn(n_in, classes, 16, 8))
        self.iters = iters

    def forward(self, x):   # B, 1, 28, 28
        B = x.shape[0]
        p = self.prim(F.relu(self.conv1(x)))                                # B, 128, 6, 6
        u = squash(p.view(B, 16, 8, 6, 6).permute(0, 1, 3, 4, 2).reshape(B, -1, 8))
        u_hat = torch.einsum("iokd,bid->biok", self.W, u)                   # B, n_in, n_out, 16
        logits = torch.zeros_like(u_hat[..., 0])
        for it in range(self.iters):
            uh = u_hat if it == self.iters - 1 else u_hat.detach()
            c = logits.softmax(dim=2)
            v = squash((c.unsqueeze(-1) * uh).sum(1))                       # B, n_out, 16
            if it < self.iters - 1:
                logits = logits + (uh * v.unsqueeze(1)).sum(-1)
        return torch.linalg.vector_norm(v, dim=-1)


NAMES = ["llama", "fno", "vae", "pointnet", "tcn", "seresnext", "c3d", "dcgan", "stn", "gnn", "perceiver",
         "seq2seq", "mobilevit", "capsnet"]


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    img = [common.float_input((B, 3, args.image, args.image), dtype, g)]
    if name == "llama":
        return Llama(), [common.token_ids((B, 64), 256, g)]
    if name == "fno":
        return FNO(), [common.float_input((B, 3, 32, 32), dtype, g)]
    if name == "vae":
        return VAE(args.image), img
    if name == "pointnet":
        return PointNet(), [common.float_input((B, 3, 256), dtype, g)]
    if name == "tcn":
        return TCN(), [common.float_input((B, 16, 128), dtype, g)]
    if name == "seresnext":
        return SEResNeXt(), img
    if name == "c3d":
        return C3D(), [common.float_input((2, 3, 8, 32, 32), dtype, g)]
    if name == "dcgan":
        return DCGAN(), [common.float_input((B, 64, 1, 1), dtype, g)]
    if name == "stn":
        return STN(), img
    if name == "gnn":
        return GNN(graphs=B), [common.float_input((B * 16, 32), dtype, g)]
    if name == "perceiver":
        return Perceiver(), [common.float_input((B, 64, 48), dtype, g)]
    if name == "seq2seq":
        return Seq2Seq(), [common.token_ids((B, 32), 100, g), common.token_ids((B, 24), 100, g)]
    if name == "mobilevit":
        return MobileViT(), img
    if name == "capsnet":
        return CapsNet(), [common.float_input((B, 1, 28, 28), dtype, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen2.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
