#!/usr/bin/env python3
"""unseen3.py — a third set of models nobody tuned rkmate for (after
tools/models/unseen.py and unseen2.py), all small and hand-written, each with
idioms that zoo.py, unseen.py, unseen2.py and coverage.py do not have: a
Conformer block (macaron half-step feed-forwards, pointwise Conv1d + GLU,
depthwise Conv1d, BatchNorm1d, SiLU, MHSA between them), a WaveNet (one_hot of
int64 samples, dilated causal Conv1d by padding both sides and slicing off the
tail, gated tanh * sigmoid units, skip connections summed over layers), a
VQ-VAE (torch.cdist to a codebook, argmin, F.embedding of the codes,
straight-through x + (q - x).detach(), commitment and codebook terms as
outputs), a RealNVP (affine couplings with checkerboard and channel mask
buffers, exp of a tanh-scaled net, log-det summed into a log-likelihood), a
CycleGAN ResNet generator (ReflectionPad2d, InstanceNorm2d without affine,
ConvTranspose2d with output_padding, tanh), a hypernetwork (per-sample conv
weights made by a Linear from a pooled embedding, applied with F.conv2d as a
grouped convolution over the batch folded into channels), a ConvLSTM unrolled
over 4 frames (conv over cat of input and hidden state, split into gates), a
GPT-2 block written as HuggingFace writes it (Conv1D as torch.addmm with a
(in, out) weight, torch.where with a finfo.min scalar tensor on a sliced tril
buffer, hand-written tanh "gelu_new" with pow, tied head), a Siamese net (one
encoder run on two inputs, F.pairwise_distance and F.cosine_similarity), a
neural ODE (fixed-step RK4 unrolled: the same weights read at every stage,
time as a filled channel), an attention U-Net (additive attention gates:
strided theta conv, bilinear upsampled sigmoid map multiplying the skip) and
a BiFPN (learnable fusion weights through relu and normalisation, depthwise
separable convs, nearest upsampling and max-pool downsampling across levels),
and a PixelCNN (masked convolutions: weight * mask buffer through F.conv2d,
mask types A and B, gated activations split with chunk).  Exported like the
zoo (tools/models/common.export), with the zoo's options, so that
`tools/bench/zoo.py --models-script tools/models/unseen3.py` runs them
through the same bench.

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


# ----------------------------------------------------------------------------- Conformer

class ConformerBlock(nn.Module):
    """Macaron half-step FFN (LayerNorm, Linear, SiLU, Dropout, Linear, * 0.5), MHSA, convolution
    module (LayerNorm, transpose, pointwise Conv1d to 2x + GLU, depthwise Conv1d, BatchNorm1d, SiLU,
    pointwise Conv1d, transpose), second half-step FFN, final LayerNorm."""

    def __init__(self, d=96, heads=4, k=15):
        super().__init__()
        def ffn():
            return nn.Sequential(nn.LayerNorm(d), nn.Linear(d, 4 * d), nn.SiLU(), nn.Dropout(0.1),
                                 nn.Linear(4 * d, d), nn.Dropout(0.1))
        self.ff1, self.ff2 = ffn(), ffn()
        self.ln_att = nn.LayerNorm(d)
        self.att = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.ln_conv = nn.LayerNorm(d)
        self.pw1 = nn.Conv1d(d, 2 * d, 1)
        self.dw = nn.Conv1d(d, d, k, padding=k // 2, groups=d)
        self.bn = nn.BatchNorm1d(d)
        self.pw2 = nn.Conv1d(d, d, 1)
        self.drop = nn.Dropout(0.1)
        self.ln_out = nn.LayerNorm(d)

    def forward(self, x):   # B, T, d
        x = x + 0.5 * self.ff1(x)
        h = self.ln_att(x)
        x = x + self.drop(self.att(h, h, h, need_weights=False)[0])
        c = self.ln_conv(x).transpose(1, 2)
        c = F.glu(self.pw1(c), dim=1)
        c = self.pw2(F.silu(self.bn(self.dw(c))))
        x = x + self.drop(c.transpose(1, 2))
        x = x + 0.5 * self.ff2(x)
        return self.ln_out(x)


class Conformer(nn.Module):
    """Conv2d subsampling of (B, 1, T, 80) features by 4 (two stride-2 convs, ReLU), Linear to d,
    two Conformer blocks, a per-frame CTC-style head with log_softmax."""

    def __init__(self, feats=80, d=96, vocab=32):
        super().__init__()
        self.sub = nn.Sequential(nn.Conv2d(1, 32, 3, 2), nn.ReLU(), nn.Conv2d(32, 32, 3, 2), nn.ReLU())
        f = ((feats - 1) // 2 - 1) // 2
        self.inp = nn.Linear(32 * f, d)
        self.blocks = nn.Sequential(ConformerBlock(d), ConformerBlock(d))
        self.head = nn.Linear(d, vocab)

    def forward(self, x):   # B, T, feats
        s = self.sub(x.unsqueeze(1))                    # B, 32, T', f
        s = s.permute(0, 2, 1, 3).flatten(2)            # B, T', 32 f
        return F.log_softmax(self.head(self.blocks(self.inp(s))), -1)


# ----------------------------------------------------------------------------- WaveNet

class WaveNet(nn.Module):
    """Quantised samples (int64) through F.one_hot + float + transpose, a causal Conv1d, residual
    layers of dilated causal Conv1d (padding on both sides, the tail sliced off) with gated
    tanh * sigmoid units, 1x1 residual (not after the last layer) and skip convs, skips summed,
    ReLU, 1x1, ReLU, 1x1 logits."""

    def __init__(self, q=64, res=32, skip=64, dilations=(1, 2, 4, 8, 16, 1, 2, 4, 8, 16)):
        super().__init__()
        self.q = q
        self.start = nn.Conv1d(q, res, 2, padding=1)
        self.dil = list(dilations)
        self.filt = nn.ModuleList([nn.Conv1d(res, 2 * res, 2, dilation=d, padding=d) for d in dilations])
        self.res = nn.ModuleList([nn.Conv1d(res, res, 1) for _ in dilations[:-1]])   # the last layer only skips
        self.skip = nn.ModuleList([nn.Conv1d(res, skip, 1) for _ in dilations])
        self.out1 = nn.Conv1d(skip, skip, 1); self.out2 = nn.Conv1d(skip, q, 1)

    def forward(self, samples):   # B, T int64 in [0, q)
        T = samples.shape[1]
        x = F.one_hot(samples, self.q).to(self.start.weight.dtype).transpose(1, 2)
        x = self.start(x)[:, :, :T]
        skips = None
        for i, (d, f, s) in enumerate(zip(self.dil, self.filt, self.skip)):
            h = f(x)[:, :, :-d]                                   # causal: drop the look-ahead tail
            a, b = h.chunk(2, 1)
            z = torch.tanh(a) * torch.sigmoid(b)
            sk = s(z)
            skips = sk if skips is None else skips + sk
            if i < len(self.res):
                x = x + self.res[i](z)
        return self.out2(F.relu(self.out1(F.relu(skips))))


# ----------------------------------------------------------------------------- VQ-VAE

class VectorQuantizer(nn.Module):
    """Nearest codebook entry by torch.cdist + argmin, F.embedding of the codes, codebook and
    commitment terms (mse against detached tensors), straight-through estimator."""

    def __init__(self, codes=64, dim=32, beta=0.25):
        super().__init__()
        self.codebook = nn.Parameter(torch.empty(codes, dim).uniform_(-1.0 / codes, 1.0 / codes))
        self.beta = beta

    def forward(self, z):   # B, C, H, W
        B, C, H, W = z.shape
        flat = z.permute(0, 2, 3, 1).reshape(-1, C)
        idx = torch.cdist(flat, self.codebook).argmin(1)
        q = F.embedding(idx, self.codebook).view(B, H, W, C).permute(0, 3, 1, 2)
        codebook_loss = F.mse_loss(q, z.detach())
        commit = F.mse_loss(z, q.detach())
        q = z + (q - z).detach()
        return q, codebook_loss + self.beta * commit, idx


class ResBlock2(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.ReLU(), nn.Conv2d(c, c, 3, padding=1), nn.ReLU(), nn.Conv2d(c, c, 1))

    def forward(self, x):
        return x + self.body(x)


class VQVAE(nn.Module):
    """Stride-2 conv encoder with residual blocks, 1x1 to the code dimension, vector quantiser,
    ConvTranspose2d decoder; returns (reconstruction, vq loss, int64 code indices)."""

    def __init__(self, ch=64, dim=32, codes=64):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, ch, 4, 2, 1), nn.ReLU(), nn.Conv2d(ch, ch, 4, 2, 1),
                                 ResBlock2(ch), ResBlock2(ch), nn.Conv2d(ch, dim, 1))
        self.vq = VectorQuantizer(codes, dim)
        self.dec = nn.Sequential(nn.Conv2d(dim, ch, 3, padding=1), ResBlock2(ch), ResBlock2(ch), nn.ReLU(),
                                 nn.ConvTranspose2d(ch, ch, 4, 2, 1), nn.ReLU(), nn.ConvTranspose2d(ch, 3, 4, 2, 1))

    def forward(self, x):
        q, vq_loss, idx = self.vq(self.enc(x))
        return self.dec(q), vq_loss, idx


# ----------------------------------------------------------------------------- RealNVP

def checkerboard(c, h, w, parity):
    ii = torch.arange(h)[:, None]; jj = torch.arange(w)[None, :]
    m = ((ii + jj + parity) % 2).to(torch.float32)
    return m.expand(c, h, w).reshape(1, c, h, w).clone()


class Coupling(nn.Module):
    """Affine coupling y = x_m + (1 - m) * (x * exp(s) + t), s = scale * tanh(net(x_m)) (both masked),
    log-det = sum of (1 - m) * s over C, H, W."""

    def __init__(self, c, h, w, mask, hidden=64):
        super().__init__()
        self.register_buffer("mask", mask)
        self.net = nn.Sequential(nn.Conv2d(c, hidden, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(hidden, hidden, 3, padding=1), nn.ReLU(),
                                 nn.Conv2d(hidden, 2 * c, 3, padding=1))
        self.scale = nn.Parameter(torch.ones(1, c, 1, 1))

    def forward(self, x, logdet):
        m = self.mask
        xm = x * m
        s, t = self.net(xm).chunk(2, 1)
        s = self.scale * torch.tanh(s) * (1 - m)
        t = t * (1 - m)
        y = xm + (1 - m) * (x * torch.exp(s) + t)
        return y, logdet + s.flatten(1).sum(1)


class RealNVP(nn.Module):
    """Couplings with alternating checkerboard masks, a squeeze (space to depth by view/permute),
    couplings with channel masks; returns the Gaussian log-likelihood per sample and z."""

    def __init__(self, image=32):
        super().__init__()
        c, h = 3, image
        self.c1 = nn.ModuleList([Coupling(c, h, h, checkerboard(c, h, h, p)) for p in (0, 1, 0)])
        cm = torch.zeros(1, 4 * c, 1, 1); cm[:, : 2 * c] = 1.0
        hs = h // 2
        self.c2 = nn.ModuleList([Coupling(4 * c, hs, hs, (cm if i % 2 == 0 else 1 - cm).expand(1, 4 * c, hs, hs)
                                          .clone()) for i in range(3)])

    def forward(self, x):
        B, C, H, W = x.shape
        logdet = torch.zeros(B, dtype=x.dtype, device=x.device)
        for c in self.c1:
            x, logdet = c(x, logdet)
        x = x.view(B, C, H // 2, 2, W // 2, 2).permute(0, 1, 3, 5, 2, 4).reshape(B, 4 * C, H // 2, W // 2)
        for c in self.c2:
            x, logdet = c(x, logdet)
        ll = -0.5 * (x * x).flatten(1).sum(1) - 0.5 * math.log(2 * math.pi) * x[0].numel() + logdet
        return ll, x


# ----------------------------------------------------------------------------- CycleGAN

class ReflResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.body = nn.Sequential(nn.ReflectionPad2d(1), nn.Conv2d(c, c, 3), nn.InstanceNorm2d(c), nn.ReLU(True),
                                  nn.Dropout(0.5),
                                  nn.ReflectionPad2d(1), nn.Conv2d(c, c, 3), nn.InstanceNorm2d(c))

    def forward(self, x):
        return x + self.body(x)


class CycleGAN(nn.Module):
    """CycleGAN's ResNet generator: ReflectionPad2d(3) + 7x7 conv, InstanceNorm2d (no affine),
    two stride-2 convs, reflection-padded residual blocks with Dropout, ConvTranspose2d with
    output_padding=1 up, ReflectionPad2d(3) + 7x7 conv, tanh."""

    def __init__(self, ngf=16, blocks=4):
        super().__init__()
        layers = [nn.ReflectionPad2d(3), nn.Conv2d(3, ngf, 7), nn.InstanceNorm2d(ngf), nn.ReLU(True)]
        c = ngf
        for _ in range(2):
            layers += [nn.Conv2d(c, 2 * c, 3, 2, 1), nn.InstanceNorm2d(2 * c), nn.ReLU(True)]
            c *= 2
        layers += [ReflResBlock(c) for _ in range(blocks)]
        for _ in range(2):
            layers += [nn.ConvTranspose2d(c, c // 2, 3, 2, 1, output_padding=1), nn.InstanceNorm2d(c // 2),
                       nn.ReLU(True)]
            c //= 2
        layers += [nn.ReflectionPad2d(3), nn.Conv2d(c, 3, 7), nn.Tanh()]
        self.net = nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


# ----------------------------------------------------------------------------- hypernetwork

class HyperConv(nn.Module):
    """A 3x3 conv whose weights are activations: a Linear maps a per-sample embedding to
    (cout, cin, 3, 3) weights, applied by F.conv2d with groups=B on the batch folded into
    channels (view(1, B*cin, H, W)), plus a bias from the same embedding."""

    def __init__(self, emb, cin, cout):
        super().__init__()
        self.cin, self.cout = cin, cout
        self.w = nn.Linear(emb, cout * cin * 9); self.b = nn.Linear(emb, cout)
        nn.init.normal_(self.w.weight, std=0.02)

    def forward(self, x, e):
        B, _, H, W = x.shape
        w = self.w(e).view(B * self.cout, self.cin, 3, 3)
        y = F.conv2d(x.reshape(1, B * self.cin, H, W), w, self.b(e).reshape(-1), padding=1, groups=B)
        return y.view(B, self.cout, H, W)


class HyperNet(nn.Module):
    """A conditioning branch (strided convs, pooled, MLP to an embedding) makes the weights of the
    two main-branch convs (HyperConv); BatchNorm, ReLU, max-pool, head."""

    def __init__(self, emb=32, classes=10):
        super().__init__()
        self.cond = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU(), nn.Conv2d(16, 32, 3, 2, 1), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, emb), nn.Tanh())
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
        self.h1 = HyperConv(emb, 16, 32); self.bn1 = nn.BatchNorm2d(32)
        self.h2 = HyperConv(emb, 32, 32); self.bn2 = nn.BatchNorm2d(32)
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        e = self.cond(x)
        y = self.stem(x)
        y = F.max_pool2d(F.relu(self.bn1(self.h1(y, e))), 2)
        y = F.relu(self.bn2(self.h2(y, e))) + y
        return self.head(y.mean((2, 3)))


# ----------------------------------------------------------------------------- ConvLSTM

class ConvLSTMCell(nn.Module):
    def __init__(self, cin, hid):
        super().__init__()
        self.hid = hid
        self.conv = nn.Conv2d(cin + hid, 4 * hid, 3, padding=1)

    def forward(self, x, h, c):
        i, f, o, g = torch.split(self.conv(torch.cat([x, h], 1)), self.hid, 1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        return h, c


class ConvLSTM(nn.Module):
    """Two stacked ConvLSTM cells (conv over cat of input and hidden, torch.split into gates)
    unrolled over the frames of a (B, T, C, H, W) clip from zero states (zeros made from sizes),
    per-step frame predictions stacked as the output."""

    def __init__(self, hid=32):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.ReLU())
        self.c1 = ConvLSTMCell(16, hid); self.c2 = ConvLSTMCell(hid, hid)
        self.out = nn.Conv2d(hid, 3, 1)
        self.hid = hid

    def forward(self, clip):
        B, T = clip.shape[0], clip.shape[1]
        preds = []
        h1 = c1 = h2 = c2 = None
        for t in range(T):
            x = self.enc(clip[:, t])
            if h1 is None:
                z = torch.zeros(B, self.hid, x.shape[2], x.shape[3], dtype=x.dtype, device=x.device)
                h1, c1, h2, c2 = z, z, z, z
            h1, c1 = self.c1(x, h1, c1)
            h2, c2 = self.c2(h1, h2, c2)
            preds.append(self.out(h2))
        return torch.stack(preds, 1)


# ----------------------------------------------------------------------------- GPT-2, HF style

class HFConv1D(nn.Module):
    """HuggingFace's Conv1D: a Linear with the weight stored (in, out), torch.addmm on the flattened input."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class HFBlock(nn.Module):
    def __init__(self, d, heads, seq):
        super().__init__()
        self.d, self.heads, self.hd = d, heads, d // heads
        self.ln_1 = nn.LayerNorm(d); self.c_attn = HFConv1D(3 * d, d); self.c_proj = HFConv1D(d, d)
        self.ln_2 = nn.LayerNorm(d); self.c_fc = HFConv1D(4 * d, d); self.c_proj2 = HFConv1D(d, 4 * d)
        self.attn_drop = nn.Dropout(0.1); self.resid_drop = nn.Dropout(0.1)
        self.register_buffer("bias", torch.tril(torch.ones(seq, seq, dtype=torch.bool)).view(1, 1, seq, seq),
                             persistent=False)

    def split(self, t):
        B, T, _ = t.shape
        return t.view(B, T, self.heads, self.hd).permute(0, 2, 1, 3)

    def forward(self, x):
        B, T, D = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(self.d, dim=2)
        q, k, v = self.split(q), self.split(k), self.split(v)
        w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], v.size(-1) ** 0.5, dtype=q.dtype)
        mask = self.bias[:, :, T - T:T, :T]
        w = torch.where(mask, w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        w = self.attn_drop(F.softmax(w, dim=-1))
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(B, T, D)
        x = x + self.resid_drop(self.c_proj(a))
        return x + self.resid_drop(self.c_proj2(gelu_new(self.c_fc(self.ln_2(x)))))


class GPT2HF(nn.Module):
    """wte + wpe (positions from torch.arange on the input's device), dropout, 3 HF-style blocks,
    ln_f, lm head tied to wte (F.linear)."""

    def __init__(self, vocab=512, d=128, layers=3, heads=4, seq=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, d); self.wpe = nn.Embedding(seq, d); self.drop = nn.Dropout(0.1)
        self.h = nn.ModuleList([HFBlock(d, heads, seq) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(d)

    def forward(self, ids):
        T = ids.shape[1]
        pos = torch.arange(0, T, dtype=torch.long, device=ids.device).unsqueeze(0)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        for b in self.h:
            x = b(x)
        return F.linear(self.ln_f(x), self.wte.weight)


# ----------------------------------------------------------------------------- Siamese

class Siamese(nn.Module):
    """One conv encoder (BatchNorm, ReLU, max-pool, Linear embedding) applied to two image inputs;
    returns (F.pairwise_distance of the F.normalize'd embeddings, F.cosine_similarity)."""

    def __init__(self, emb=64):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, 32, 3, 1, 1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(32, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(64, 64, 3, 1, 1), nn.BatchNorm2d(64), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(256, emb))

    def forward(self, a, b):
        ea, eb = self.enc(a), self.enc(b)
        return F.pairwise_distance(F.normalize(ea, dim=1), F.normalize(eb, dim=1)), F.cosine_similarity(ea, eb, dim=1)


# ----------------------------------------------------------------------------- neural ODE

class ODEFunc(nn.Module):
    """f(t, y): time appended as a constant channel (torch.full_like), two convs with GroupNorm and
    softplus."""

    def __init__(self, c=32):
        super().__init__()
        self.c1 = nn.Conv2d(c + 1, c, 3, padding=1); self.n1 = nn.GroupNorm(8, c)
        self.c2 = nn.Conv2d(c + 1, c, 3, padding=1); self.n2 = nn.GroupNorm(8, c)

    def forward(self, t, y):
        tt = torch.full_like(y[:, :1], t)
        h = F.softplus(self.n1(self.c1(torch.cat([y, tt], 1))))
        return self.n2(self.c2(torch.cat([h, tt], 1)))


class NeuralODE(nn.Module):
    """Downsampling stem, a fixed-step RK4 integration of ODEFunc from t=0 to 1 in 4 steps (16
    evaluations of the same weights), global pool head."""

    def __init__(self, c=32, steps=4, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, 2, 1), nn.GroupNorm(8, c), nn.ReLU(),
                                  nn.Conv2d(c, c, 3, 2, 1))
        self.f = ODEFunc(c); self.steps = steps
        self.head = nn.Linear(c, classes)

    def forward(self, x):
        y = self.stem(x)
        dt = 1.0 / self.steps
        for i in range(self.steps):
            t = i * dt
            k1 = self.f(t, y)
            k2 = self.f(t + dt / 2, y + dt / 2 * k1)
            k3 = self.f(t + dt / 2, y + dt / 2 * k2)
            k4 = self.f(t + dt, y + dt * k3)
            y = y + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        return self.head(F.adaptive_avg_pool2d(y, 1).flatten(1))


# ----------------------------------------------------------------------------- attention U-Net

class AttGate(nn.Module):
    """Additive attention gate: theta(skip) strided 2x2 conv, phi(gating) 1x1, ReLU of the sum,
    psi 1x1 + sigmoid, bilinear upsample of the map, skip * map, 1x1 conv + BatchNorm."""

    def __init__(self, cs, cg, ci):
        super().__init__()
        self.theta = nn.Conv2d(cs, ci, 2, 2, bias=False); self.phi = nn.Conv2d(cg, ci, 1)
        self.psi = nn.Conv2d(ci, 1, 1)
        self.W = nn.Sequential(nn.Conv2d(cs, cs, 1), nn.BatchNorm2d(cs))

    def forward(self, s, g):
        a = torch.sigmoid(self.psi(F.relu(self.theta(s) + self.phi(g))))
        a = F.interpolate(a, size=s.shape[2:], mode="bilinear", align_corners=False)
        return self.W(s * a)


def dconv(i, o):
    return nn.Sequential(nn.Conv2d(i, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True),
                         nn.Conv2d(o, o, 3, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True))


class AttUNet(nn.Module):
    """A 3-level U-Net whose skips pass through attention gates (gated by the coarser level),
    upsampling by nearest interpolate + conv."""

    def __init__(self, base=16, classes=2):
        super().__init__()
        b = base
        self.e1, self.e2, self.e3 = dconv(3, b), dconv(b, 2 * b), dconv(2 * b, 4 * b)
        self.g2 = AttGate(2 * b, 4 * b, b); self.g1 = AttGate(b, 2 * b, b)
        self.u2 = nn.Conv2d(4 * b, 2 * b, 3, padding=1); self.d2 = dconv(4 * b, 2 * b)
        self.u1 = nn.Conv2d(2 * b, b, 3, padding=1); self.d1 = dconv(2 * b, b)
        self.out = nn.Conv2d(b, classes, 1)

    def forward(self, x):
        x1 = self.e1(x)
        x2 = self.e2(F.max_pool2d(x1, 2))
        x3 = self.e3(F.max_pool2d(x2, 2))
        y = self.d2(torch.cat([self.g2(x2, x3), self.u2(F.interpolate(x3, scale_factor=2.0, mode="nearest"))], 1))
        y = self.d1(torch.cat([self.g1(x1, y), self.u1(F.interpolate(y, scale_factor=2.0, mode="nearest"))], 1))
        return self.out(y)


# ----------------------------------------------------------------------------- BiFPN

class SepConv(nn.Module):
    """Depthwise 3x3 + pointwise 1x1 + BatchNorm, after a swish."""

    def __init__(self, c):
        super().__init__()
        self.dw = nn.Conv2d(c, c, 3, padding=1, groups=c, bias=False)
        self.pw = nn.Conv2d(c, c, 1); self.bn = nn.BatchNorm2d(c, momentum=0.01, eps=1e-3)

    def forward(self, x):
        return self.bn(self.pw(self.dw(x * torch.sigmoid(x))))


class Fuse(nn.Module):
    """Fast normalised fusion: w = relu(param), sum_i w_i x_i / (sum w + eps)."""

    def __init__(self, n, c):
        super().__init__()
        self.w = nn.Parameter(torch.ones(n)); self.conv = SepConv(c)

    def forward(self, xs):
        w = F.relu(self.w)
        w = w / (w.sum() + 1e-4)
        y = w[0] * xs[0]
        for i in range(1, len(xs)):
            y = y + w[i] * xs[i]
        return self.conv(y)


class BiFPN(nn.Module):
    """A conv backbone giving 3 levels, 1x1 lateral convs, two BiFPN layers (top-down with nearest
    upsampling, bottom-up with max_pool2d(3, 2, 1), learnable normalised fusion weights), a head
    pooling every level."""

    def __init__(self, c=32, layers=2, classes=10):
        super().__init__()
        self.b1 = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1), nn.BatchNorm2d(24), nn.SiLU(),
                                nn.Conv2d(24, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.SiLU())
        self.b2 = nn.Sequential(nn.Conv2d(32, 48, 3, 2, 1), nn.BatchNorm2d(48), nn.SiLU())
        self.b3 = nn.Sequential(nn.Conv2d(48, 64, 3, 2, 1), nn.BatchNorm2d(64), nn.SiLU())
        self.lat = nn.ModuleList([nn.Conv2d(ci, c, 1) for ci in (32, 48, 64)])
        self.layers = nn.ModuleList([nn.ModuleDict(dict(td2=Fuse(2, c), td1=Fuse(2, c), bu2=Fuse(3, c),
                                                        bu3=Fuse(2, c))) for _ in range(layers)])
        self.head = nn.Linear(3 * c, classes)

    def forward(self, x):
        f1 = self.b1(x); f2 = self.b2(f1); f3 = self.b3(f2)
        p1, p2, p3 = self.lat[0](f1), self.lat[1](f2), self.lat[2](f3)
        for L in self.layers:
            t2 = L["td2"]([p2, F.interpolate(p3, scale_factor=2.0, mode="nearest")])
            o1 = L["td1"]([p1, F.interpolate(t2, scale_factor=2.0, mode="nearest")])
            o2 = L["bu2"]([p2, t2, F.max_pool2d(o1, 3, 2, 1)])
            o3 = L["bu3"]([p3, F.max_pool2d(o2, 3, 2, 1)])
            p1, p2, p3 = o1, o2, o3
        return self.head(torch.cat([p.mean((2, 3)) for p in (p1, p2, p3)], 1))


# ----------------------------------------------------------------------------- PixelCNN

class MaskedConv(nn.Conv2d):
    """A Conv2d whose weight is multiplied by a causal mask buffer (type A excludes the centre)
    before F.conv2d."""

    def __init__(self, mask_type, cin, cout, k):
        super().__init__(cin, cout, k, padding=k // 2)
        m = torch.ones(cout, cin, k, k)
        m[:, :, k // 2, k // 2 + (mask_type == "B"):] = 0
        m[:, :, k // 2 + 1:] = 0
        self.register_buffer("mask", m)

    def forward(self, x):
        return F.conv2d(x, self.weight * self.mask, self.bias, padding=self.padding)


class PixelCNN(nn.Module):
    """Masked 7x7 type-A conv, gated residual layers of masked 3x3 type-B convs (chunk, tanh *
    sigmoid), 1x1 output to 3 x 16 logits per pixel, reshaped and log_softmax over the levels."""

    def __init__(self, c=48, layers=5, levels=16):
        super().__init__()
        self.levels = levels
        self.inp = MaskedConv("A", 3, c, 7)
        self.gated = nn.ModuleList([MaskedConv("B", c, 2 * c, 3) for _ in range(layers)])
        self.res = nn.ModuleList([nn.Conv2d(c, c, 1) for _ in range(layers)])
        self.out = nn.Sequential(nn.ReLU(), MaskedConv("B", c, c, 1), nn.ReLU(), nn.Conv2d(c, 3 * levels, 1))

    def forward(self, x):
        B, _, H, W = x.shape
        h = self.inp(x)
        for g, r in zip(self.gated, self.res):
            a, b = g(h).chunk(2, 1)
            h = h + r(torch.tanh(a) * torch.sigmoid(b))
        return F.log_softmax(self.out(h).view(B, 3, self.levels, H, W), 2)


NAMES = ["conformer", "wavenet", "vqvae", "realnvp", "cyclegan", "hypernet", "convlstm", "gpt2hf", "siamese",
         "neuralode", "attunet", "bifpn", "pixelcnn"]


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    img = [common.float_input((B, 3, S, S), dtype, g)]
    half = max(8, (S // 2) // 8 * 8)
    if name == "conformer":
        return Conformer(), [common.float_input((B, 128, 80), dtype, g)]
    if name == "wavenet":
        return WaveNet(), [common.token_ids((B, 512), 64, g)]
    if name == "vqvae":
        return VQVAE(), img
    if name == "realnvp":
        return RealNVP(32), [common.float_input((B, 3, 32, 32), dtype, g)]
    if name == "cyclegan":
        return CycleGAN(), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "hypernet":
        return HyperNet(), img
    if name == "convlstm":
        return ConvLSTM(), [common.float_input((B, 4, 3, half, half), dtype, g)]
    if name == "gpt2hf":
        return GPT2HF(), [common.token_ids((B, 64), 512, g)]
    if name == "siamese":
        return Siamese(), [common.float_input((B, 3, half, half), dtype, g),
                           common.float_input((B, 3, half, half), dtype, g)]
    if name == "neuralode":
        return NeuralODE(), img
    if name == "attunet":
        return AttUNet(), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "bifpn":
        return BiFPN(), img
    if name == "pixelcnn":
        return PixelCNN(), [common.float_input((B, 3, 32, 32), dtype, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen3.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
