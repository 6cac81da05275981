#!/usr/bin/env python3
"""unseen9.py — a ninth set of models nobody tuned rkmate for
(after tools/models/unseen.py ... unseen8.py), all small and written as users
of torch 2.x write them today.  Each has idioms the other sets do not:

A DiT (diffusion transformer) with adaLN-Zero: a sinusoidal embedding of a
float timestep plus a class nn.Embedding whose labels are dropped for
classifier-free guidance by torch.where(torch.rand(B) < p, null, y) in
forward, a conditioning SiLU-Linear whose output is .chunk(6, dim=1) into
shift / scale / gate for attention and MLP, modulate x * (1 +
scale.unsqueeze(1)) + shift.unsqueeze(1) after LayerNorm(elementwise_affine=
False), gated residuals gate.unsqueeze(1) * f(x), timm's qkv
reshape(B, N, 3, H, hd).permute(2, 0, 3, 1, 4).unbind(0) into SDPA, a final
adaLN chunk(2) layer, unpatchify by torch.einsum("nhwpqc->nchpwq") and a
learned-sigma output split by torch.split into eps and variance halves.

A YOLOv8-style neck and head: Conv-BatchNorm-SiLU blocks, SPPF (one
MaxPool2d(5, 1, 2) applied three times in a chain, the four maps
concatenated), C2f blocks (list(cv1(x).chunk(2, 1)), y.extend(m(y[-1]) for m
in ...), cat of the grown list), nn.Upsample(scale_factor=2, mode="nearest")
and concatenations on the top-down and bottom-up paths, per-level box and
class heads viewed (B, no, -1) and concatenated over levels, and the DFL
decoder: softmax over reg_max bins then a 1x1 Conv2d whose frozen weight is
torch.arange (requires_grad_(False)).

A Swin-V2 stage pair: cosine attention (F.normalize of q and k, a learned
log logit_scale clamped with max=log(100) and exp'ed), the qkv bias built as
torch.cat((q_bias, torch.zeros_like(v_bias), v_bias)) into F.linear, a
continuous position bias MLP over a log-spaced coordinate table buffer
(sign * log2(|x| + 1) / log2(8)) indexed by a relative-position index buffer
and squashed by 16 * sigmoid, shifted windows by torch.roll with a -100
attention-mask buffer, res-post-norm x + norm(attn(x)), and V2's patch
merging (four strided slices cat-ed, reduction Linear, then LayerNorm).

A Switch-Transformer MoE layer: router input jitter by
x * torch.empty_like(x).uniform_(1 - eps, 1 + eps) (an in-place RNG op in
forward), router softmax in float32, top-1 routing by argmax and F.one_hot,
the gate probs.max(-1).values, every expert run on every token through
batched (E, D, F) expert weight parameters with torch.einsum
("btd,edf->btef") and the one-hot mixing by einsum("bted,bte->btd"), the
load-balancing loss E * sum(f_i * P_i) and a router z-loss, a language-model
cross-entropy on shifted tokens.

A RetNet: multi-scale retention with a learned per-head decay (log gamma =
-softplus(param)), the decay mask built in forward from torch.arange
(n[:, None] - n[None, :], masked_fill of the negative distances with -inf,
exp, divided by sqrt of its row sums), q k^T times the mask, row
normalisation by abs().sum().clamp(min=1), F.group_norm over heads on a
(B*T, H*hd) view, a SiLU gate, and a recurrent check of the last step
(the state S = gamma S + k^T v unrolled) whose difference is a second output.

A graph net on an int64 edge_index input: self loops added by torch.cat with
a torch.arange, degrees by in-place scatter_add_ of ones into torch.zeros,
deg.pow(-0.5) with an in-place masked_fill_ of inf, GCN messages
x[row] * norm[:, None] scattered by scatter_add_ with an expanded index, a
GraphSAGE max aggregator by index_reduce_(..., "amax", include_self=False),
GIN with a learned (1 + eps) and Tensor.index_add, and a graph readout by
torch.segment_reduce(..., "max", lengths=) over a lengths buffer.

A Hyena operator: in-projection, a causal short depthwise Conv1d sliced to
the length, split into three, an implicit long filter (positional features
from torch.linspace with cos / sin bands, an MLP with a learned-frequency
sin activation, an exponential decay window exp(-t |alpha|)), FFT long
convolution by torch.fft.rfft(n=2L) / irfft(n=2L, norm="forward") cut back
to L, plus a bias skip, gating by the other branches, output projection and
a cross-entropy.

An xLSTM mLSTM block: an up-projection with a causal depthwise conv and SiLU,
input and forget gates from Linear layers, the parallel stabilised form:
F.logsigmoid forget gates, cumsum with a zero column torch.cat-ed in front,
a log-decay matrix by broadcasting differences, masked_fill(-inf) with a
torch.tril(ones(bool)) built in forward, plus the input gate, amax
stabiliser, exp, a normaliser torch.maximum(|C.sum|, exp(-max)), a learnable
skip and a multi-head GroupNorm.

A MobileViT as Apple's ml-cvnets writes it: MV2 inverted residuals (expand
1x1, BatchNorm, SiLU, depthwise 3x3, project, residual), MobileViT blocks
that unfold the map into patches by reshape / transpose / reshape (not
F.unfold), run a pre-norm transformer over the (B * P, N, d) patch sequences
and fold back by the inverse reshapes, then a 1x1 projection, a fusion conv
over torch.cat with the block input, and a pooled classifier.

A neural audio codec (DAC-lite): Conv1d encoder with Snake activations
(x + sin(alpha x)^2 / (alpha + 1e-9) with a (1, C, 1) alpha parameter),
weight-normed convs by torch.nn.utils.parametrizations.weight_norm, a
residual vector quantiser of 4 stages with factorised low-dimensional codes
(in/out projection Conv1d, F.normalize-d codes and codebooks, argmax of
cosine similarity, F.embedding), per-stage codebook and commitment losses,
quantiser dropout by a torch.randint per sample compared with a stage
index, a ConvTranspose1d decoder, an L1 waveform loss and a multi-resolution
STFT loss by torch.stft(return_complex=True) with Hann window buffers,
.abs(), log of clamped magnitudes.

Exported like the zoo (tools/models/common.export), with the zoo's options,
so that `tools/bench/zoo.py --models-script tools/models/unseen9.py` runs
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


# ----------------------------------------------------------------------------- DiT, adaLN-Zero

def timestep_embedding(t, dim, max_period=10000):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(0, half, dtype=torch.float32) / half).to(t.device)
    args = t[:, None].float() * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


def modulate(x, shift, scale):
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class DiTBlock(nn.Module):
    def __init__(self, D, heads):
        super().__init__()
        self.heads = heads
        self.norm1 = nn.LayerNorm(D, elementwise_affine=False, eps=1e-6)
        self.qkv = nn.Linear(D, 3 * D)
        self.proj = nn.Linear(D, D)
        self.norm2 = nn.LayerNorm(D, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(approximate="tanh"), nn.Linear(4 * D, D))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(D, 6 * D))

    def attn(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        x = F.scaled_dot_product_attention(q, k, v)
        return self.proj(x.transpose(1, 2).reshape(B, N, C))

    def forward(self, x, c):
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + gate_msa.unsqueeze(1) * self.attn(modulate(self.norm1(x), shift_msa, scale_msa))
        x = x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp))
        return x


class DiT(nn.Module):
    def __init__(self, in_ch=4, p=4, D=64, depth=3, heads=4, classes=10, grid=8, drop=0.1):
        super().__init__()
        self.p, self.in_ch, self.out_ch, self.classes, self.drop = p, in_ch, 2 * in_ch, classes, drop
        self.x_embedder = nn.Conv2d(in_ch, D, p, stride=p)
        self.pos = nn.Parameter(torch.randn(1, grid * grid, D) * 0.02)
        self.t_mlp = nn.Sequential(nn.Linear(64, D), nn.SiLU(), nn.Linear(D, D))
        self.y_embedder = nn.Embedding(classes + 1, D)
        self.blocks = nn.ModuleList(DiTBlock(D, heads) for _ in range(depth))
        self.norm_final = nn.LayerNorm(D, elementwise_affine=False, eps=1e-6)
        self.final_mod = nn.Sequential(nn.SiLU(), nn.Linear(D, 2 * D))
        self.final = nn.Linear(D, p * p * self.out_ch)

    def unpatchify(self, x):
        c, p = self.out_ch, self.p
        h = w = int(x.shape[1] ** 0.5)
        x = x.reshape(x.shape[0], h, w, p, p, c)
        x = torch.einsum("nhwpqc->nchpwq", x)
        return x.reshape(x.shape[0], c, h * p, w * p)

    def forward(self, x, t, y, noise):
        if self.training:
            drop_ids = torch.rand(y.shape[0], device=y.device) < self.drop
            y = torch.where(drop_ids, torch.full_like(y, self.classes), y)
        h = self.x_embedder(x).flatten(2).transpose(1, 2) + self.pos
        c = self.t_mlp(timestep_embedding(t * 1000, 64)) + self.y_embedder(y)
        for blk in self.blocks:
            h = blk(h, c)
        shift, scale = self.final_mod(c).chunk(2, dim=1)
        h = self.final(modulate(self.norm_final(h), shift, scale))
        out = self.unpatchify(h)
        eps, var = torch.split(out, self.in_ch, dim=1)
        return F.mse_loss(eps, noise) + 0.01 * var.pow(2).mean(), out


# ----------------------------------------------------------------------------- YOLOv8-style neck + head

class ConvBNSiLU(nn.Module):
    def __init__(self, c1, c2, k=1, s=1):
        super().__init__()
        self.conv = nn.Conv2d(c1, c2, k, s, k // 2, bias=False)
        self.bn = nn.BatchNorm2d(c2, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU()

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Bottleneck(nn.Module):
    def __init__(self, c, shortcut=True):
        super().__init__()
        self.cv1 = ConvBNSiLU(c, c, 3)
        self.cv2 = ConvBNSiLU(c, c, 3)
        self.add = shortcut

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class C2f(nn.Module):
    def __init__(self, c1, c2, n=1, shortcut=False):
        super().__init__()
        self.c = c2 // 2
        self.cv1 = ConvBNSiLU(c1, 2 * self.c, 1)
        self.cv2 = ConvBNSiLU((2 + n) * self.c, c2, 1)
        self.m = nn.ModuleList(Bottleneck(self.c, shortcut) for _ in range(n))

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        y.extend(m(y[-1]) for m in self.m)
        return self.cv2(torch.cat(y, 1))


class SPPF(nn.Module):
    def __init__(self, c1, c2, k=5):
        super().__init__()
        c_ = c1 // 2
        self.cv1 = ConvBNSiLU(c1, c_, 1)
        self.cv2 = ConvBNSiLU(c_ * 4, c2, 1)
        self.m = nn.MaxPool2d(kernel_size=k, stride=1, padding=k // 2)

    def forward(self, x):
        y = [self.cv1(x)]
        y.extend(self.m(y[-1]) for _ in range(3))
        return self.cv2(torch.cat(y, 1))


class DFL(nn.Module):
    def __init__(self, c1=8):
        super().__init__()
        self.conv = nn.Conv2d(c1, 1, 1, bias=False).requires_grad_(False)
        x = torch.arange(c1, dtype=torch.float)
        self.conv.weight.data[:] = nn.Parameter(x.view(1, c1, 1, 1))
        self.c1 = c1

    def forward(self, x):
        b, _, a = x.shape
        return self.conv(x.view(b, 4, self.c1, a).transpose(2, 1).softmax(1)).view(b, 4, a)


class YOLONeck(nn.Module):
    def __init__(self, nc=8, reg_max=8):
        super().__init__()
        self.nc, self.reg_max = nc, reg_max
        self.no = nc + 4 * reg_max
        self.stem = nn.Sequential(ConvBNSiLU(3, 16, 3, 2), ConvBNSiLU(16, 32, 3, 2), C2f(32, 32, 1, True))
        self.b3 = nn.Sequential(ConvBNSiLU(32, 32, 3, 2), C2f(32, 32, 1, True))        # /8
        self.b4 = nn.Sequential(ConvBNSiLU(32, 64, 3, 2), C2f(64, 64, 1, True))        # /16
        self.b5 = nn.Sequential(ConvBNSiLU(64, 64, 3, 2), C2f(64, 64, 1, True), SPPF(64, 64))  # /32
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.td4 = C2f(128, 64)
        self.td3 = C2f(96, 32)
        self.down3 = ConvBNSiLU(32, 32, 3, 2)
        self.bu4 = C2f(96, 64)
        self.down4 = ConvBNSiLU(64, 64, 3, 2)
        self.bu5 = C2f(128, 64)
        self.cv2 = nn.ModuleList(nn.Sequential(ConvBNSiLU(c, 32, 3), nn.Conv2d(32, 4 * reg_max, 1)) for c in (32, 64, 64))
        self.cv3 = nn.ModuleList(nn.Sequential(ConvBNSiLU(c, 32, 3), nn.Conv2d(32, nc, 1)) for c in (32, 64, 64))
        self.dfl = DFL(reg_max)

    def forward(self, x):
        p3 = self.b3(self.stem(x))
        p4 = self.b4(p3)
        p5 = self.b5(p4)
        n4 = self.td4(torch.cat([self.up(p5), p4], 1))
        n3 = self.td3(torch.cat([self.up(n4), p3], 1))
        m4 = self.bu4(torch.cat([self.down3(n3), n4], 1))
        m5 = self.bu5(torch.cat([self.down4(m4), p5], 1))
        feats = [torch.cat((self.cv2[i](f), self.cv3[i](f)), 1) for i, f in enumerate((n3, m4, m5))]
        B = x.shape[0]
        x_cat = torch.cat([f.view(B, self.no, -1) for f in feats], 2)
        box, cls = x_cat.split((self.reg_max * 4, self.nc), 1)
        dbox = self.dfl(box)
        return torch.cat((dbox, cls.sigmoid()), 1)


# ----------------------------------------------------------------------------- Swin V2

def window_partition(x, ws):
    B, H, W, C = x.shape
    x = x.view(B, H // ws, ws, W // ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, ws, ws, C)


def window_reverse(windows, ws, H, W):
    C = windows.shape[-1]
    x = windows.view(-1, H // ws, W // ws, ws, ws, C)
    return x.permute(0, 1, 3, 2, 4, 5).contiguous().view(-1, H, W, C)


class WindowAttentionV2(nn.Module):
    def __init__(self, dim, ws, heads):
        super().__init__()
        self.ws, self.heads = ws, heads
        self.logit_scale = nn.Parameter(torch.log(10 * torch.ones((heads, 1, 1))))
        self.cpb_mlp = nn.Sequential(nn.Linear(2, 128, bias=True), nn.ReLU(inplace=True), nn.Linear(128, heads, bias=False))
        rh = torch.arange(-(ws - 1), ws, dtype=torch.float32)
        table = torch.stack(torch.meshgrid([rh, rh], indexing="ij")).permute(1, 2, 0).contiguous().unsqueeze(0)
        table /= ws - 1
        table *= 8
        table = torch.sign(table) * torch.log2(torch.abs(table) + 1.0) / math.log2(8)
        self.register_buffer("relative_coords_table", table, persistent=False)
        coords = torch.stack(torch.meshgrid([torch.arange(ws), torch.arange(ws)], indexing="ij")).flatten(1)
        rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
        rel[:, :, 0] += ws - 1
        rel[:, :, 1] += ws - 1
        rel[:, :, 0] *= 2 * ws - 1
        self.register_buffer("relative_position_index", rel.sum(-1), persistent=False)
        self.qkv = nn.Linear(dim, dim * 3, bias=False)
        self.q_bias = nn.Parameter(torch.randn(dim) * 0.02)
        self.v_bias = nn.Parameter(torch.randn(dim) * 0.02)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, mask=None):
        B_, N, C = x.shape
        qkv_bias = torch.cat((self.q_bias, torch.zeros_like(self.v_bias, requires_grad=False), self.v_bias))
        qkv = F.linear(x, self.qkv.weight, qkv_bias).reshape(B_, N, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = F.normalize(q, dim=-1) @ F.normalize(k, dim=-1).transpose(-2, -1)
        logit_scale = torch.clamp(self.logit_scale, max=math.log(1.0 / 0.01)).exp()
        attn = attn * logit_scale
        table = self.cpb_mlp(self.relative_coords_table).view(-1, self.heads)
        bias = table[self.relative_position_index.view(-1)].view(N, N, -1).permute(2, 0, 1).contiguous()
        attn = attn + (16 * torch.sigmoid(bias)).unsqueeze(0)
        if mask is not None:
            nW = mask.shape[0]
            attn = attn.view(B_ // nW, nW, self.heads, N, N) + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, self.heads, N, N)
        attn = attn.softmax(-1)
        return self.proj((attn @ v).transpose(1, 2).reshape(B_, N, C))


class SwinV2Block(nn.Module):
    def __init__(self, dim, res, ws, heads, shift):
        super().__init__()
        self.res, self.ws, self.shift = res, ws, shift
        self.attn = WindowAttentionV2(dim, ws, heads)
        self.norm1 = nn.LayerNorm(dim)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        if shift > 0:
            img_mask = torch.zeros((1, res, res, 1))
            cnt = 0
            for h in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                for w in (slice(0, -ws), slice(-ws, -shift), slice(-shift, None)):
                    img_mask[:, h, w, :] = cnt
                    cnt += 1
            mw = window_partition(img_mask, ws).view(-1, ws * ws)
            am = mw.unsqueeze(1) - mw.unsqueeze(2)
            am = am.masked_fill(am != 0, float(-100.0)).masked_fill(am == 0, float(0.0))
        else:
            am = None
        self.register_buffer("attn_mask", am, persistent=False)

    def forward(self, x):
        B, L, C = x.shape
        H = W = self.res
        shortcut = x
        x = x.view(B, H, W, C)
        if self.shift > 0:
            x = torch.roll(x, shifts=(-self.shift, -self.shift), dims=(1, 2))
        xw = window_partition(x, self.ws).view(-1, self.ws * self.ws, C)
        aw = self.attn(xw, self.attn_mask).view(-1, self.ws, self.ws, C)
        x = window_reverse(aw, self.ws, H, W)
        if self.shift > 0:
            x = torch.roll(x, shifts=(self.shift, self.shift), dims=(1, 2))
        x = shortcut + self.norm1(x.view(B, H * W, C))
        return x + self.norm2(self.mlp(x))


class PatchMergingV2(nn.Module):
    def __init__(self, res, dim):
        super().__init__()
        self.res = res
        self.reduction = nn.Linear(4 * dim, 2 * dim, bias=False)
        self.norm = nn.LayerNorm(2 * dim)

    def forward(self, x):
        B, L, C = x.shape
        x = x.view(B, self.res, self.res, C)
        x = torch.cat([x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]], -1)
        return self.norm(self.reduction(x.view(B, -1, 4 * C)))


class SwinV2(nn.Module):
    def __init__(self, img=96, dim=32, ws=6, classes=10):
        super().__init__()
        r = img // 4
        self.patch = nn.Conv2d(3, dim, 4, 4)
        self.pnorm = nn.LayerNorm(dim)
        self.s1 = nn.Sequential(SwinV2Block(dim, r, ws, 2, 0), SwinV2Block(dim, r, ws, 2, ws // 2))
        self.merge = PatchMergingV2(r, dim)
        self.s2 = nn.Sequential(SwinV2Block(2 * dim, r // 2, ws, 4, 0), SwinV2Block(2 * dim, r // 2, ws, 4, ws // 2))
        self.norm = nn.LayerNorm(2 * dim)
        self.head = nn.Linear(2 * dim, classes)

    def forward(self, x):
        x = self.pnorm(self.patch(x).flatten(2).transpose(1, 2))
        x = self.s2(self.merge(self.s1(x)))
        return self.head(self.norm(x).mean(1))


# ----------------------------------------------------------------------------- Switch Transformer MoE

class SwitchMoE(nn.Module):
    def __init__(self, vocab=256, D=64, Fh=128, E=4, jitter=0.01):
        super().__init__()
        self.E, self.jitter = E, jitter
        self.emb = nn.Embedding(vocab, D)
        self.ln1 = nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, 4, batch_first=True)
        self.ln2 = nn.LayerNorm(D)
        self.router = nn.Linear(D, E, bias=False)
        self.w1 = nn.Parameter(torch.randn(E, D, Fh) / math.sqrt(D))
        self.w2 = nn.Parameter(torch.randn(E, Fh, D) / math.sqrt(Fh))
        self.ln3 = nn.LayerNorm(D)
        self.head = nn.Linear(D, vocab, bias=False)

    def moe(self, x):
        if self.training:
            x_r = x * torch.empty_like(x).uniform_(1.0 - self.jitter, 1.0 + self.jitter)
        else:
            x_r = x
        logits = self.router(x_r).float()
        probs = torch.softmax(logits, dim=-1)
        expert_index = torch.argmax(probs, dim=-1)
        mask = F.one_hot(expert_index, self.E).to(x.dtype)
        gate = probs.max(dim=-1).values.to(x.dtype)
        h = F.relu(torch.einsum("btd,edf->btef", x, self.w1))
        out = torch.einsum("btef,efd->bted", h, self.w2)
        y = torch.einsum("bted,bte->btd", out, mask) * gate.unsqueeze(-1)
        f_i = mask.mean(dim=(0, 1))
        P_i = probs.mean(dim=(0, 1))
        aux = self.E * torch.sum(f_i * P_i)
        z = torch.logsumexp(logits, dim=-1).pow(2).mean()
        return y, aux, z

    def forward(self, ids):
        x = self.emb(ids)
        T = ids.shape[1]
        h = self.ln1(x)
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool, device=ids.device), 1)
        x = x + self.attn(h, h, h, attn_mask=causal, need_weights=False)[0]
        y, aux, z = self.moe(self.ln2(x))
        x = x + y
        logits = self.head(self.ln3(x))
        lm = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]), ids[:, 1:].reshape(-1))
        return lm + 0.01 * aux + 0.001 * z


# ----------------------------------------------------------------------------- RetNet

class Retention(nn.Module):
    def __init__(self, D=64, H=4):
        super().__init__()
        self.H, self.hd = H, D // H
        self.q = nn.Linear(D, D, bias=False)
        self.k = nn.Linear(D, D, bias=False)
        self.v = nn.Linear(D, D, bias=False)
        self.g = nn.Linear(D, D, bias=False)
        self.o = nn.Linear(D, D, bias=False)
        self.decay = nn.Parameter(torch.linspace(3.0, 6.0, H))
        self.gn_w = nn.Parameter(torch.ones(D))
        self.gn_b = nn.Parameter(torch.zeros(D))

    def forward(self, x):
        B, T, D = x.shape
        q = self.q(x).view(B, T, self.H, self.hd).transpose(1, 2)
        k = self.k(x).view(B, T, self.H, self.hd).transpose(1, 2) * self.hd ** -0.5
        v = self.v(x).view(B, T, self.H, self.hd).transpose(1, 2)
        log_gamma = -F.softplus(-self.decay) - 0.05      # log of a decay in (0, 1)
        n = torch.arange(T, device=x.device)
        dist = (n[:, None] - n[None, :]).to(x.dtype)
        mask = (dist[None] * log_gamma[:, None, None]).masked_fill(dist[None] < 0, float("-inf")).exp()
        mask = mask / mask.sum(-1, keepdim=True).sqrt()
        ret = (q @ k.transpose(-1, -2)) * mask
        ret = ret / ret.detach().abs().sum(-1, keepdim=True).clamp(min=1)
        o = (ret @ v).transpose(1, 2).reshape(B * T, D)
        o = F.group_norm(o, self.H, self.gn_w, self.gn_b).view(B, T, D)
        out = self.o(F.silu(self.g(x)) * o)
        # recurrent form of the un-normalised retention at the last step
        gamma = log_gamma.exp()[None, :, None, None]
        S = torch.zeros(B, self.H, self.hd, self.hd, dtype=x.dtype, device=x.device)
        for t in range(T):
            S = gamma * S + k[:, :, t, :, None] * v[:, :, t, None, :]
        rec = q[:, :, -1:] @ S
        par = (q[:, :, -1:] @ k.transpose(-1, -2) * (dist[-1] * log_gamma[:, None, None]).exp()) @ v
        return out, (rec - par).abs().mean()


class RetNet(nn.Module):
    def __init__(self, vocab=256, D=64, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, D)
        self.ln1 = nn.ModuleList(nn.LayerNorm(D) for _ in range(layers))
        self.ret = nn.ModuleList(Retention(D) for _ in range(layers))
        self.ln2 = nn.ModuleList(nn.LayerNorm(D) for _ in range(layers))
        self.ffn = nn.ModuleList(nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D)) for _ in range(layers))
        self.head = nn.Linear(D, vocab)

    def forward(self, ids):
        x = self.emb(ids)
        diffs = []
        for ln1, ret, ln2, ffn in zip(self.ln1, self.ret, self.ln2, self.ffn):
            y, d = ret(ln1(x))
            x = x + y
            x = x + ffn(ln2(x))
            diffs.append(d)
        logits = self.head(x)
        loss = F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())
        return loss, torch.stack(diffs).sum()


# ----------------------------------------------------------------------------- graph net on an edge_index input

class GraphNet(nn.Module):
    def __init__(self, fin=16, hid=32, classes=5, graphs=4, nodes=64):
        super().__init__()
        self.gcn = nn.Linear(fin, hid)
        self.sage_l = nn.Linear(hid, hid)
        self.sage_r = nn.Linear(hid, hid)
        self.gin_eps = nn.Parameter(torch.tensor(0.1))
        self.gin = nn.Sequential(nn.Linear(hid, hid), nn.ReLU(), nn.Linear(hid, hid))
        self.head = nn.Linear(2 * hid, classes)
        lengths = torch.full((graphs,), nodes, dtype=torch.int64)
        lengths[0] -= 8
        lengths[-1] += 8
        self.register_buffer("lengths", lengths)

    def forward(self, x, edge_index):
        N = x.shape[0]
        loops = torch.arange(N, device=x.device)
        ei = torch.cat([edge_index, torch.stack([loops, loops])], 1)
        row, col = ei[0], ei[1]
        deg = torch.zeros(N, dtype=x.dtype, device=x.device).scatter_add_(0, col, torch.ones_like(col, dtype=x.dtype))
        dinv = deg.pow(-0.5)
        dinv.masked_fill_(dinv == float("inf"), 0)
        norm = dinv[row] * dinv[col]
        h = self.gcn(x)
        msg = h[row] * norm[:, None]
        h = torch.zeros_like(h).scatter_add_(0, col[:, None].expand_as(msg), msg)
        h = F.relu(h)
        agg = torch.zeros_like(h).index_reduce_(0, edge_index[1], h[edge_index[0]], "amax", include_self=False)
        h = F.relu(self.sage_l(agg) + self.sage_r(h))
        h = self.gin((1 + self.gin_eps) * h + h.index_add(0, edge_index[1], h[edge_index[0]]))
        g_max = torch.segment_reduce(h, "max", lengths=self.lengths)
        g_sum = torch.segment_reduce(h, "sum", lengths=self.lengths)
        return self.head(torch.cat([g_max, g_sum / self.lengths[:, None].to(h.dtype)], 1))


# ----------------------------------------------------------------------------- Hyena

class Sin(nn.Module):
    def __init__(self, dim, w=10.0):
        super().__init__()
        self.freq = nn.Parameter(w * torch.ones(1, dim))

    def forward(self, x):
        return torch.sin(self.freq * x)


class HyenaFilter(nn.Module):
    def __init__(self, D, order, L, emb=9, hid=32):
        super().__init__()
        self.D, self.order, self.bands = D, order, (emb - 1) // 2
        self.mlp = nn.Sequential(nn.Linear(emb, hid), Sin(hid), nn.Linear(hid, hid), Sin(hid), nn.Linear(hid, D * order))
        self.alpha = nn.Parameter(torch.linspace(0.5, 4.0, D * order))
        self.bias = nn.Parameter(torch.randn(order, D) * 0.1)

    def forward(self, L, dtype, device):
        t = torch.linspace(0, 1, L, device=device, dtype=dtype)[:, None]
        f = torch.linspace(1e-4, self.bands - 1, self.bands, device=device, dtype=dtype)[None]
        z = torch.cat([t, torch.cos(2 * math.pi * f * t), torch.sin(2 * math.pi * f * t)], -1)
        h = self.mlp(z) * torch.exp(-t * self.alpha.abs())
        return h.transpose(0, 1).reshape(self.order, self.D, L)


def fftconv(u, k, bias):
    L = u.shape[-1]
    n = 2 * L
    k_f = torch.fft.rfft(k, n=n) / n
    u_f = torch.fft.rfft(u, n=n)
    y = torch.fft.irfft(u_f * k_f, n=n, norm="forward")[..., :L]
    return y + u * bias.unsqueeze(-1)


class Hyena(nn.Module):
    def __init__(self, vocab=256, D=32, L=128, order=2):
        super().__init__()
        self.order = order
        self.emb = nn.Embedding(vocab, D)
        self.norm = nn.LayerNorm(D)
        self.in_proj = nn.Linear(D, (order + 1) * D)
        self.short = nn.Conv1d((order + 1) * D, (order + 1) * D, 3, padding=2, groups=(order + 1) * D)
        self.filt = HyenaFilter(D, order, L)
        self.out_proj = nn.Linear(D, D)
        self.head = nn.Linear(D, vocab)

    def forward(self, ids):
        x = self.emb(ids)
        L = ids.shape[1]
        u = self.in_proj(self.norm(x)).transpose(1, 2)
        uc = self.short(u)[..., :L]
        *xs, v = uc.split(x.shape[-1], dim=1)
        k = self.filt(L, x.dtype, x.device)
        for o, x_i in enumerate(reversed(xs)):
            v = x_i * fftconv(v, k[o], self.filt.bias[o])
        y = x + self.out_proj(v.transpose(1, 2))
        logits = self.head(y)
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


# ----------------------------------------------------------------------------- xLSTM mLSTM

def parallel_stabilized_mlstm(q, k, v, igate, fgate, eps=1e-6):
    B, H, S, DH = q.shape
    log_fgates = F.logsigmoid(fgate)
    ltr = torch.tril(torch.ones((S, S), dtype=torch.bool, device=q.device))
    log_fgates_cumsum = torch.cat([torch.zeros((B, H, 1, 1), dtype=q.dtype, device=q.device),
                                   torch.cumsum(log_fgates, dim=-2)], dim=-2)
    rep = log_fgates_cumsum.repeat(1, 1, 1, S + 1)
    _log_fg_matrix = rep - rep.transpose(-2, -1)
    log_fg_matrix = torch.where(ltr, _log_fg_matrix[:, :, 1:, 1:], -float("inf"))
    log_D = log_fg_matrix + igate.transpose(-2, -1)
    max_log_D, _ = torch.max(log_D, dim=-1, keepdim=True)
    D = torch.exp(log_D - max_log_D)
    C = (q @ (k / math.sqrt(DH)).transpose(-2, -1)) * D
    normalizer = torch.maximum(C.sum(dim=-1, keepdim=True).abs(), torch.exp(-max_log_D))
    return (C / (normalizer + eps)) @ v


class MLSTMBlock(nn.Module):
    def __init__(self, D=48, H=4, pf=2):
        super().__init__()
        inner = pf * D
        self.H = H
        self.norm = nn.LayerNorm(D)
        self.up = nn.Linear(D, 2 * inner)
        self.conv = nn.Conv1d(inner, inner, 4, padding=3, groups=inner)
        self.q = nn.Linear(inner, inner)
        self.k = nn.Linear(inner, inner)
        self.v = nn.Linear(inner, inner)
        self.igate = nn.Linear(3 * inner, H)
        self.fgate = nn.Linear(3 * inner, H)
        with torch.no_grad():
            self.fgate.bias.copy_(torch.linspace(3.0, 6.0, H))
        self.outnorm = nn.GroupNorm(H, inner)
        self.skip = nn.Parameter(torch.ones(inner))
        self.down = nn.Linear(inner, D)

    def forward(self, x):
        B, S, _ = x.shape
        x_m, z = self.up(self.norm(x)).chunk(2, dim=-1)
        xc = F.silu(self.conv(x_m.transpose(1, 2))[..., :S].transpose(1, 2))
        q, k, v = self.q(xc), self.k(xc), self.v(x_m)
        gin = torch.cat([q, k, v], -1)
        ig = self.igate(gin).transpose(-1, -2).unsqueeze(-1)
        fg = self.fgate(gin).transpose(-1, -2).unsqueeze(-1)
        heads = lambda t: t.view(B, S, self.H, -1).transpose(1, 2)  # noqa: E731
        h = parallel_stabilized_mlstm(heads(q), heads(k), heads(v), ig, fg)
        h = h.transpose(1, 2).reshape(B * S, -1)
        h = self.outnorm(h).view(B, S, -1)
        h = (h + self.skip * xc) * F.silu(z)
        return x + self.down(h)


class XLSTM(nn.Module):
    def __init__(self, vocab=256, D=48, layers=2):
        super().__init__()
        self.emb = nn.Embedding(vocab, D)
        self.blocks = nn.Sequential(*[MLSTMBlock(D) for _ in range(layers)])
        self.norm = nn.LayerNorm(D)
        self.head = nn.Linear(D, vocab)

    def forward(self, ids):
        logits = self.head(self.norm(self.blocks(self.emb(ids))))
        return F.cross_entropy(logits[:, :-1].flatten(0, 1), ids[:, 1:].flatten())


# ----------------------------------------------------------------------------- MobileViT (ml-cvnets unfolding)

def conv_bn(c1, c2, k=3, s=1, g=1, act=True):
    layers = [nn.Conv2d(c1, c2, k, s, k // 2, groups=g, bias=False), nn.BatchNorm2d(c2)]
    if act:
        layers.append(nn.SiLU())
    return nn.Sequential(*layers)


class MV2(nn.Module):
    def __init__(self, c1, c2, s=1, e=2):
        super().__init__()
        h = c1 * e
        self.use_res = s == 1 and c1 == c2
        self.block = nn.Sequential(conv_bn(c1, h, 1), conv_bn(h, h, 3, s, g=h), conv_bn(h, c2, 1, act=False))

    def forward(self, x):
        return x + self.block(x) if self.use_res else self.block(x)


class MViTLayer(nn.Module):
    def __init__(self, d, heads=4):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.ffn = nn.Sequential(nn.Linear(d, 2 * d), nn.SiLU(), nn.Linear(2 * d, d))

    def forward(self, x):
        BP, N, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(BP, N, 3, self.heads, -1).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-1, -2) * (d // self.heads) ** -0.5, -1) @ v
        x = x + self.proj(a.transpose(1, 2).reshape(BP, N, d))
        return x + self.ffn(self.ln2(x))


class MobileViTBlock(nn.Module):
    def __init__(self, c, d, layers=2, ph=2, pw=2):
        super().__init__()
        self.ph, self.pw = ph, pw
        self.local = nn.Sequential(conv_bn(c, c, 3), nn.Conv2d(c, d, 1, bias=False))
        self.transformer = nn.Sequential(*[MViTLayer(d) for _ in range(layers)], nn.LayerNorm(d))
        self.proj = conv_bn(d, c, 1)
        self.fusion = conv_bn(2 * c, c, 3)

    def unfolding(self, fm):
        ph, pw = self.ph, self.pw
        B, C, H, W = fm.shape
        nh, nw = H // ph, W // pw
        N, P = nh * nw, ph * pw
        x = fm.reshape(B * C * nh, ph, nw, pw).transpose(1, 2)
        x = x.reshape(B, C, N, P).transpose(1, 3)
        return x.reshape(B * P, N, C), (B, H, W, nh, nw)

    def folding(self, x, info):
        B, H, W, nh, nw = info
        ph, pw = self.ph, self.pw
        C = x.shape[-1]
        x = x.contiguous().view(B, ph * pw, nh * nw, C).transpose(1, 3)
        x = x.reshape(B * C * nh, nw, ph, pw).transpose(1, 2)
        return x.reshape(B, C, nh * ph, nw * pw)

    def forward(self, x):
        res = x
        patches, info = self.unfolding(self.local(x))
        fm = self.proj(self.folding(self.transformer(patches), info))
        return self.fusion(torch.cat((res, fm), 1))


class MobileViT(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = conv_bn(3, 16, 3, 2)
        self.l1 = nn.Sequential(MV2(16, 16), MV2(16, 24, 2), MV2(24, 24))
        self.l2 = nn.Sequential(MV2(24, 32, 2), MobileViTBlock(32, 48))
        self.l3 = nn.Sequential(MV2(32, 48, 2), MobileViTBlock(48, 64))
        self.exp = conv_bn(48, 96, 1)
        self.fc = nn.Linear(96, classes)

    def forward(self, x):
        x = self.exp(self.l3(self.l2(self.l1(self.stem(x)))))
        return self.fc(F.adaptive_avg_pool2d(x, 1).flatten(1))


# ----------------------------------------------------------------------------- DAC-lite audio codec

wn = torch.nn.utils.parametrizations.weight_norm


class Snake1d(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.alpha = nn.Parameter(torch.ones(1, c, 1) + 0.1 * torch.randn(1, c, 1))

    def forward(self, x):
        return x + (self.alpha + 1e-9).reciprocal() * torch.sin(self.alpha * x).pow(2)


class ResUnit(nn.Module):
    def __init__(self, c, dil):
        super().__init__()
        self.block = nn.Sequential(Snake1d(c), wn(nn.Conv1d(c, c, 7, dilation=dil, padding=3 * dil)),
                                   Snake1d(c), wn(nn.Conv1d(c, c, 1)))

    def forward(self, x):
        return x + self.block(x)


class FactorizedVQ(nn.Module):
    def __init__(self, D, K=64, cd=8):
        super().__init__()
        self.in_proj = wn(nn.Conv1d(D, cd, 1))
        self.out_proj = wn(nn.Conv1d(cd, D, 1))
        self.codebook = nn.Embedding(K, cd)

    def forward(self, z):
        z_e = self.in_proj(z)                              # B, cd, T
        enc = F.normalize(z_e.transpose(1, 2).reshape(-1, z_e.shape[1]))
        cb = F.normalize(self.codebook.weight)
        idx = (enc @ cb.t()).argmax(1)
        z_q = F.embedding(idx, self.codebook.weight).view(z_e.shape[0], z_e.shape[2], -1).transpose(1, 2)
        commit = F.mse_loss(z_e, z_q.detach(), reduction="none").mean([1, 2])
        cbl = F.mse_loss(z_q, z_e.detach(), reduction="none").mean([1, 2])
        z_q = z_e + (z_q - z_e).detach()
        return self.out_proj(z_q), commit, cbl


class DACLite(nn.Module):
    def __init__(self, c=16, D=32, nq=4, strides=(4, 4, 4)):
        super().__init__()
        layers = [wn(nn.Conv1d(1, c, 7, padding=3))]
        ch = c
        for s in strides:
            layers += [ResUnit(ch, 1), ResUnit(ch, 3), Snake1d(ch),
                       wn(nn.Conv1d(ch, 2 * ch, 2 * s, stride=s, padding=math.ceil(s / 2)))]
            ch *= 2
        layers += [Snake1d(ch), wn(nn.Conv1d(ch, D, 3, padding=1))]
        self.enc = nn.Sequential(*layers)
        self.quantizers = nn.ModuleList(FactorizedVQ(D) for _ in range(nq))
        dec = [wn(nn.Conv1d(D, ch, 7, padding=3))]
        for s in reversed(strides):
            dec += [Snake1d(ch), wn(nn.ConvTranspose1d(ch, ch // 2, 2 * s, stride=s, padding=math.ceil(s / 2))),
                    ResUnit(ch // 2, 1)]
            ch //= 2
        dec += [Snake1d(ch), wn(nn.Conv1d(ch, 1, 7, padding=3)), nn.Tanh()]
        self.dec = nn.Sequential(*dec)
        self.nq = nq
        for n in (256, 64):
            self.register_buffer("win%d" % n, torch.hann_window(n), persistent=False)

    def stft_loss(self, y, x):
        loss = 0
        for n in (256, 64):
            w = getattr(self, "win%d" % n)
            Y = torch.stft(y.squeeze(1), n, hop_length=n // 4, window=w, return_complex=True).abs()
            X = torch.stft(x.squeeze(1), n, hop_length=n // 4, window=w, return_complex=True).abs()
            loss = loss + F.l1_loss(Y.clamp(min=1e-5).log10(), X.clamp(min=1e-5).log10()) + F.l1_loss(Y, X)
        return loss

    def forward(self, wav):
        z = self.enc(wav)
        B = z.shape[0]
        n_q = torch.randint(1, self.nq + 1, (B,), device=z.device) if self.training else \
            torch.full((B,), self.nq, device=z.device)
        residual, z_q = z, 0
        commit = cbl = 0
        for i, q in enumerate(self.quantizers):
            keep = (i < n_q).to(z.dtype)
            zq_i, c_i, b_i = q(residual)
            z_q = z_q + zq_i * keep[:, None, None]
            residual = residual - zq_i
            commit = commit + (c_i * keep).mean()
            cbl = cbl + (b_i * keep).mean()
        y = self.dec(z_q)[..., : wav.shape[-1]]
        return F.l1_loss(y, wav) + self.stft_loss(y, wav) + 0.25 * commit + cbl


NAMES = ["dit", "yolo_neck", "swinv2", "switch_moe", "retnet", "graph_net", "hyena", "xlstm", "mobilevit",
         "dac_codec"]


def edge_index(graphs, nodes, per_node, g):
    """Random intra-graph edges of a batch of `graphs` graphs (node counts as GraphNet's lengths)."""
    counts = [nodes] * graphs
    counts[0] -= 8
    counts[-1] += 8
    src, dst, off = [], [], 0
    for n in counts:
        e = n * per_node
        src.append(torch.randint(0, n, (e,), generator=g) + off)
        dst.append(torch.randint(0, n, (e,), generator=g) + off)
        off += n
    return torch.stack([torch.cat(src), torch.cat(dst)])


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    third = max(16, (S // 3) // 16 * 16)    # 32 at the default --image 96
    if name == "dit":
        t = torch.rand((B,), generator=g, dtype=torch.float64).to(dtype)
        return DiT(grid=third // 4), [common.float_input((B, 4, third, third), dtype, g), t,
                                      common.token_ids((B,), 10, g), common.float_input((B, 4, third, third), dtype, g)]
    if name == "yolo_neck":
        return YOLONeck(), [common.float_input((B, 3, S, S), dtype, g)]
    if name == "swinv2":
        return SwinV2(img=S // 24 * 24), [common.float_input((B, 3, S // 24 * 24, S // 24 * 24), dtype, g)]
    if name == "switch_moe":
        return SwitchMoE(), [common.token_ids((B, 32), 256, g)]
    if name == "retnet":
        return RetNet(), [common.token_ids((B, 32), 256, g)]
    if name == "graph_net":
        return GraphNet(graphs=B), [common.float_input((B * 64, 16), dtype, g), edge_index(B, 64, 4, g)]
    if name == "hyena":
        return Hyena(), [common.token_ids((B, 128), 256, g)]
    if name == "xlstm":
        return XLSTM(), [common.token_ids((B, 64), 256, g)]
    if name == "mobilevit":
        return MobileViT(), [common.float_input((B, 3, S // 32 * 32, S // 32 * 32), dtype, g)]
    if name == "dac_codec":
        return DACLite(), [0.5 * torch.tanh(common.float_input((B, 1, 4096), dtype, g))]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen9.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
