#!/usr/bin/env python3
"""unseen12.py — a twelfth set of models nobody tuned rkmate for
(after tools/models/unseen.py ... unseen11.py), all small and written as users
of torch 2.x write them today.  Each has idioms the other sets do not:

A FiLM-conditioned restoration U-Net (2x super-resolution + denoising):
FiLM layers (Linear(cond) -> gamma, beta by .chunk(2, dim=1), x * (1 +
gamma) + beta) on a condition made of an nn.Embedding of the degradation
type plus a Linear of the log noise level, nn.ReplicationPad2d before
unpadded 3x3 convolutions, GroupNorm + SiLU + Dropout2d residual blocks,
space-to-depth downsampling by nn.PixelUnshuffle(2), nearest-neighbour
F.interpolate(scale_factor=2) upsampling with cat-ed skips, an output by
F.pixel_shuffle(2) added to the bilinear (align_corners=False) upsampled
input, and a Charbonnier + (1 - SSIM) loss whose SSIM is a Gaussian-window
depthwise F.conv2d(groups=3) over x, y, x*x, y*y and x*y.

An ESM-2 masked-language model with a contact head (fair-esm): token dropout
(the embedding output masked_fill_-ed in place at the <mask> tokens, then
rescaled by (1 - 0.15 * 0.8) / (1 - observed mask ratio)[:, None, None]),
padding zeroed by x * (1 - padding_mask.type_as(x)), rotary embeddings from
an inv_freq buffer through torch.einsum("i,j->ij") and cat((freqs, freqs)),
the trunk under torch.autocast("cpu", dtype=torch.bfloat16) (the trace keeps
the casts as aten::to), explicit attention probabilities returned by every
layer and torch.stack-ed, the contact head (eos / bos rows and columns
removed, symmetrize x + x.transpose(-1, -2), average product correction
a1 * a2 / a12 by sums over the last two axes, a logistic regression over
layers * heads), an LM head tied to the embedding by F.linear, cross-entropy
with ignore_index -100 and a contact BCE on an upper-triangular buffer.

An S4D sequence classifier (state-spaces' s4d.py): complex parameters stored
as view_as_real tensors and read by torch.view_as_complex, A = -exp(log_A_real)
+ 1j * A_imag (a Python complex scalar), a Vandermonde kernel
2 * einsum("hn,hnl->hl", C * (exp(dtA) - 1) / A, exp(dtA[..., None] *
arange(L))).real, the convolution by torch.fft.rfft(n=2L) * rfft /
torch.fft.irfft(n=2L)[..., :L], the D skip, a Conv1d(H, 2H, 1) + nn.GLU(dim=-2)
output, pre-LayerNorm over transposed (B, H, L) activations and mean pooling.

A Point Transformer segmenter (pointcept's PointTransformerLayer): kNN
indices from torch.cdist + topk(largest=False) inside the forward, neighbour
features by advanced indexing points[batch_index, idx], vector attention
w = k_j - q_i + pos_enc(p_j - p_i) through a BatchNorm1d / ReLU / Linear
MLP on (n, nsample, c) activations transposed for the norms, softmax over
the neighbour axis, share_planes grouping by view(n, ns, s, c // s) *
w.unsqueeze(2) summed over neighbours, and per-point cross-entropy.

A BigGAN-style conditional GAN step: torch.nn.utils.parametrizations
.spectral_norm on every conv / linear (power iteration in training mode
writing the _u / _v buffers in place through F.normalize(out=...)), each
discriminator call re-running it, class-conditional BatchNorm (affine=False
BatchNorm2d, gains / biases from spectral-normed Linears of a shared class
embedding cat-ed with a z chunk: the hierarchical latent z.split), nearest
upsampling, SAGAN self-attention with max-pooled keys / values and a zero
gamma, a projection discriminator (sum pooling, embed(y) * h summed), hinge
losses for D (on G(z).detach()) and G together, and BigGAN's off-diagonal
orthogonal regulariser on G's weights.  torch.jit.trace keeps the power
iteration's F.normalize(out=self._u) as an aten::div out= call but not the
no_grad around it, so the saved module cannot run a training step (the
exporter's own check fails: "functions with out=... arguments don't support
automatic differentiation"); the zoo exports it with --no-check.

A DINO self-distillation step: a tiny ViT whose position embedding is
F.interpolate-d with mode="bicubic" (scale_factor with the +0.1 offset, in
DINOv2's float(w0 + 0.1) / M form: DINO's w0 / sqrt(N) is a traced tensor
under torch.jit.trace, which interpolate refuses) for the local crops, a multi-crop wrapper that groups crops by resolution with
torch.unique_consecutive(return_counts=True) + torch.cumsum and cats outputs
onto torch.empty(0), the DINO head (GELU MLP, F.normalize, last layer under
torch.nn.utils.parametrizations.weight_norm with its g frozen at 1), a
teacher (deepcopy, requires_grad_(False)) on the global crops only under
no_grad, the centred / sharpened teacher softmax on a center buffer,
cross-entropy over the crop pairs v != iq, and the center re-assigned
(self.center = self.center * m + ...) as DINO does.

A MoCo v2 step: the key encoder's momentum update written with .data under
no_grad (which torch.jit.trace does not record), shuffle-BN by torch.randperm
and argsort inside the forward, l_pos / l_neg by torch.einsum with the queue
buffer .clone().detach(), logits / T with zero labels, the dequeue-and-enqueue
writing keys.T into the queue slice in place and the int queue pointer.

An FCOS detection head: a small conv backbone, an FPN (lateral 1x1, top-down
nearest F.interpolate(size=...), 3x3 output convs), a tower of conv +
GroupNorm + ReLU shared over levels, learnable per-level Scale parameters
inside torch.exp, anchor points from torch.meshgrid(indexing="ij"),
torchvision.ops.sigmoid_focal_loss on one-hot targets, decoded boxes on the
positives (boolean indexing) through torchvision.ops.generalized_box_iou_loss,
and the centerness target sqrt(min/max * min/max) in a BCE-with-logits.

A soft actor-critic update (CleanRL's sac_continuous_action): a squashed
Gaussian actor (tanh log-std rescaled, torch.distributions.Normal.rsample,
log_prob minus log(scale * (1 - tanh^2) + 1e-6)), twin Q networks on
cat([obs, act]), target Q networks and the next action under no_grad,
torch.min of the twins, the entropy temperature alpha = log_alpha.exp().item()
(a Python float fixed by the trace) and the alpha loss, all summed.

A complex-ratio-mask speech enhancer (DCCRN / CRN style): torch.stft
(return_complex=True) with a hann_window buffer, log1p of the magnitude into
a Conv2d encoder strided along frequency (BatchNorm2d, ELU), an nn.GRU over
frames, a ConvTranspose2d decoder with cat-ed skips, a mask
tanh(|m|) * exp(j (angle(spec) + atan2(m_i, m_r))) built with torch.complex
of cos / sin, torch.istft(length=...), and a negative SI-SNR (zero mean,
projection onto the target) plus a compressed-magnitude L1.

An scVI variational autoencoder (scvi-tools VAE): log1p counts cat-ed with
a one-hot batch covariate, FCLayers (Linear, BatchNorm1d(momentum=0.01,
eps=1e-3), ReLU, Dropout), q(z) Normal(mean, sqrt(exp(var) + 1e-4)).rsample,
the observed library size log(x.sum(1)), a softmax decoder times
exp(library), gene-wise dispersion exp(px_r), scVI's zero-inflated negative
binomial log-likelihood (softplus, torch.lgamma, the (x < eps).type(float32)
case split), and torch.distributions.kl_divergence(Normal, Normal).

An old-school CNN with random training-mode layers: nn.RReLU (random slopes
in training), nn.LocalResponseNorm, nn.FractionalMaxPool2d(output_ratio=0.7)
(random pooling regions drawn in the forward), SELU with
nn.FeatureAlphaDropout, nn.LPPool2d, an nn.Softmax2d channel attention, and
F.multi_margin_loss plus a label-smoothed cross-entropy.

A Linformer (lucidrains' linformer) with gradient checkpointing: keys and
values projected along the sequence by a shared (seq_len, k) parameter
through torch.einsum("bnd,nk->bkd") (read twice: lucidrains' share_kv
`self.proj_v = self.proj_k` is a shared Parameter torch.jit.trace refuses), padded keys masked_fill-ed to zero
before the projection, and every layer wrapped in
torch.utils.checkpoint.checkpoint(use_reentrant=False) as HF / timm do when
gradient checkpointing is on.  torch.jit.trace records the non-reentrant
checkpoint's torch.autograd.Function as a prim::PythonOp that torch.jit.save
refuses; the exporter first refused it by name, and now inlines every
checkpoint call (the layers traced as if called directly).

Exported like the zoo (tools/models/common.export), with the zoo's options,
so that `tools/bench/zoo.py --models-script tools/models/unseen12.py` runs
them through the same bench.

--list prints the names.  Sizes are small by default (--image 96, --batch 4).
"""

import copy
import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import torch  # noqa: E402
from torchvision.ops import generalized_box_iou_loss, sigmoid_focal_loss  # noqa: E402

nn = torch.nn
F = torch.nn.functional


# ----------------------------------------------------------------------------- FiLM U-Net

class FiLM(nn.Module):
    def __init__(self, cond_dim, ch):
        super().__init__()
        self.proj = nn.Linear(cond_dim, 2 * ch)

    def forward(self, x, c):
        gamma, beta = self.proj(c)[:, :, None, None].chunk(2, dim=1)
        return x * (1 + gamma) + beta


class FiLMResBlock(nn.Module):
    def __init__(self, ci, co, cond_dim, groups=8, drop=0.1):
        super().__init__()
        self.pad1, self.conv1 = nn.ReplicationPad2d(1), nn.Conv2d(ci, co, 3)
        self.norm1, self.film = nn.GroupNorm(groups, co), FiLM(cond_dim, co)
        self.pad2, self.conv2 = nn.ReplicationPad2d(1), nn.Conv2d(co, co, 3)
        self.norm2 = nn.GroupNorm(groups, co)
        self.drop = nn.Dropout2d(drop)
        self.skip = nn.Conv2d(ci, co, 1) if ci != co else nn.Identity()

    def forward(self, x, c):
        h = F.silu(self.film(self.norm1(self.conv1(self.pad1(x))), c))
        h = self.conv2(self.pad2(self.drop(h)))
        return F.silu(self.norm2(h) + self.skip(x))


def gaussian_window(size=7, sigma=1.5, channels=3):
    x = torch.arange(size, dtype=torch.float64) - size // 2
    g = torch.exp(-x ** 2 / (2 * sigma ** 2))
    g = g / g.sum()
    return (g[:, None] * g[None, :]).expand(channels, 1, size, size).contiguous().float()


def ssim(x, y, window, C1=0.01 ** 2, C2=0.03 ** 2):
    ch = x.shape[1]
    mu_x = F.conv2d(x, window, groups=ch)
    mu_y = F.conv2d(y, window, groups=ch)
    sxx = F.conv2d(x * x, window, groups=ch) - mu_x ** 2
    syy = F.conv2d(y * y, window, groups=ch) - mu_y ** 2
    sxy = F.conv2d(x * y, window, groups=ch) - mu_x * mu_y
    num = (2 * mu_x * mu_y + C1) * (2 * sxy + C2)
    den = (mu_x ** 2 + mu_y ** 2 + C1) * (sxx + syy + C2)
    return (num / den).mean()


class FiLMUNet(nn.Module):
    def __init__(self, c=32, n_types=4, cond_dim=32):
        super().__init__()
        self.type_emb = nn.Embedding(n_types, cond_dim)
        self.sigma_proj = nn.Sequential(nn.Linear(1, cond_dim), nn.SiLU(), nn.Linear(cond_dim, cond_dim))
        self.stem = nn.Sequential(nn.ReplicationPad2d(1), nn.Conv2d(3, c, 3))
        self.enc1 = FiLMResBlock(c, c, cond_dim)
        self.down1 = nn.Sequential(nn.PixelUnshuffle(2), nn.Conv2d(4 * c, 2 * c, 1))
        self.enc2 = FiLMResBlock(2 * c, 2 * c, cond_dim)
        self.down2 = nn.Sequential(nn.PixelUnshuffle(2), nn.Conv2d(8 * c, 2 * c, 1))
        self.mid = FiLMResBlock(2 * c, 2 * c, cond_dim)
        self.dec2 = FiLMResBlock(4 * c, 2 * c, cond_dim)
        self.dec1 = FiLMResBlock(3 * c, c, cond_dim)
        self.to_rgb = nn.Conv2d(c, 3 * 4, 3, padding=1)
        self.register_buffer("window", gaussian_window(), persistent=False)

    def forward(self, lr, kind, sigma, hr):
        c = self.type_emb(kind) + self.sigma_proj(torch.log(sigma)[:, None])
        h1 = self.enc1(self.stem(lr), c)
        h2 = self.enc2(self.down1(h1), c)
        m = self.mid(self.down2(h2), c)
        u = F.interpolate(m, scale_factor=2, mode="nearest")
        u = self.dec2(torch.cat([u, h2], dim=1), c)
        u = F.interpolate(u, scale_factor=2, mode="nearest")
        u = self.dec1(torch.cat([u, h1], dim=1), c)
        base = F.interpolate(lr, size=hr.shape[-2:], mode="bilinear", align_corners=False)
        sr = base + F.pixel_shuffle(self.to_rgb(u), 2)
        charb = torch.sqrt((sr - hr) ** 2 + 1e-6).mean()
        s = ssim(sr, hr, self.window)
        return charb + 0.2 * (1 - s), s.detach()


# ----------------------------------------------------------------------------- ESM-2

def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class ESMRotary(nn.Module):
    def __init__(self, dim):
        super().__init__()
        inv_freq = 1.0 / (10000 ** (torch.arange(0, dim, 2).float() / dim))
        self.register_buffer("inv_freq", inv_freq)

    def forward(self, q, k):
        t = torch.arange(k.shape[-2], device=k.device).type_as(self.inv_freq)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1).to(q.device)
        cos, sin = emb.cos()[None, None, :, :], emb.sin()[None, None, :, :]
        return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


class ESMLayer(nn.Module):
    def __init__(self, d, heads, ffn, drop=0.1):
        super().__init__()
        self.h, self.dh = heads, d // heads
        self.scaling = self.dh ** -0.5
        self.ln1 = nn.LayerNorm(d)
        self.q_proj, self.k_proj, self.v_proj, self.out_proj = (nn.Linear(d, d) for _ in range(4))
        self.rot = ESMRotary(self.dh)
        self.ln2 = nn.LayerNorm(d)
        self.fc1, self.fc2 = nn.Linear(d, ffn), nn.Linear(ffn, d)
        self.drop = nn.Dropout(drop)

    def forward(self, x, padding_mask):
        B, L, d = x.shape
        h = self.ln1(x)
        q = (self.q_proj(h) * self.scaling).view(B, L, self.h, self.dh).transpose(1, 2)
        k = self.k_proj(h).view(B, L, self.h, self.dh).transpose(1, 2)
        v = self.v_proj(h).view(B, L, self.h, self.dh).transpose(1, 2)
        q, k = self.rot(q, k)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w.masked_fill(padding_mask[:, None, None, :], float("-inf"))
        probs = F.softmax(w.float(), dim=-1).type_as(w)
        a = torch.matmul(self.drop(probs), v).transpose(1, 2).reshape(B, L, d)
        x = x + self.out_proj(a)
        x = x + self.fc2(F.gelu(self.fc1(self.ln2(x))))
        return x, probs


class ESM2(nn.Module):
    def __init__(self, vocab=33, d=64, heads=4, layers=3, padding_idx=1, mask_idx=32, eos_idx=2):
        super().__init__()
        self.padding_idx, self.mask_idx, self.eos_idx = padding_idx, mask_idx, eos_idx
        self.embed_tokens = nn.Embedding(vocab, d, padding_idx=padding_idx)
        self.layers = nn.ModuleList([ESMLayer(d, heads, 4 * d) for _ in range(layers)])
        self.emb_layer_norm_after = nn.LayerNorm(d)
        self.lm_dense, self.lm_ln = nn.Linear(d, d), nn.LayerNorm(d)
        self.lm_bias = nn.Parameter(torch.zeros(vocab))
        self.regression = nn.Linear(layers * heads, 1)

    def forward(self, tokens, labels, contacts):
        padding_mask = tokens.eq(self.padding_idx)
        x = self.embed_tokens(tokens)
        x.masked_fill_((tokens == self.mask_idx).unsqueeze(-1), 0.0)
        mask_ratio_train = 0.15 * 0.8
        src_lengths = (~padding_mask).sum(-1)
        mask_ratio_observed = (tokens == self.mask_idx).sum(-1).to(x.dtype) / src_lengths
        x = x * (1 - mask_ratio_train) / (1 - mask_ratio_observed)[:, None, None]
        x = x * (1 - padding_mask.unsqueeze(-1).type_as(x))
        attns = []
        with torch.autocast("cpu", dtype=torch.bfloat16):
            for layer in self.layers:
                x, a = layer(x, padding_mask)
                attns.append(a)
        x = self.emb_layer_norm_after(x.float())
        h = self.lm_ln(F.gelu(self.lm_dense(x)))
        logits = F.linear(h, self.embed_tokens.weight) + self.lm_bias
        mlm = F.cross_entropy(logits.view(-1, logits.shape[-1]), labels.view(-1), ignore_index=-100)
        # contact head
        att = torch.stack(attns, 1).float()                           # B, layers, heads, L, L
        eos_mask = tokens.ne(self.eos_idx).to(att)
        eos_mask = eos_mask.unsqueeze(1) * eos_mask.unsqueeze(2)
        att = att * eos_mask[:, None, None, :, :]
        att = att[..., :-1, :-1][..., 1:, 1:]
        B, nl, nh, L, _ = att.shape
        att = att.view(B, nl * nh, L, L)
        att = att + att.transpose(-1, -2)
        a1, a2 = att.sum(-1, keepdims=True), att.sum(-2, keepdims=True)
        a12 = att.sum((-1, -2), keepdims=True)
        att = att - a1 * a2 / a12
        c = self.regression(att.permute(0, 2, 3, 1)).squeeze(3)
        tri = torch.triu(torch.ones(L, L, dtype=torch.bool, device=c.device), diagonal=6)
        contact = F.binary_cross_entropy_with_logits(c[:, tri], contacts[:, tri])
        return mlm + contact, torch.sigmoid(c).detach()


# ----------------------------------------------------------------------------- S4D

class S4DKernel(nn.Module):
    def __init__(self, d_model, N=32, dt_min=0.001, dt_max=0.1):
        super().__init__()
        H = d_model
        log_dt = torch.rand(H) * (math.log(dt_max) - math.log(dt_min)) + math.log(dt_min)
        C = torch.randn(H, N // 2, dtype=torch.cfloat)
        self.C = nn.Parameter(torch.view_as_real(C))
        self.log_dt = nn.Parameter(log_dt)
        self.log_A_real = nn.Parameter(torch.log(0.5 * torch.ones(H, N // 2)))
        self.A_imag = nn.Parameter(math.pi * torch.arange(N // 2).float().repeat(H, 1))

    def forward(self, L):
        dt = torch.exp(self.log_dt)
        C = torch.view_as_complex(self.C)
        A = -torch.exp(self.log_A_real) + 1j * self.A_imag
        dtA = A * dt.unsqueeze(-1)
        K = dtA.unsqueeze(-1) * torch.arange(L, device=A.device)
        C = C * (torch.exp(dtA) - 1.0) / A
        return 2 * torch.einsum("hn, hnl -> hl", C, torch.exp(K)).real


class S4DLayer(nn.Module):
    def __init__(self, d_model, d_state=32, dropout=0.1):
        super().__init__()
        self.h = d_model
        self.D = nn.Parameter(torch.randn(self.h))
        self.kernel = S4DKernel(self.h, N=d_state)
        self.activation = nn.GELU()
        self.dropout = nn.Dropout(dropout)
        self.output_linear = nn.Sequential(nn.Conv1d(self.h, 2 * self.h, kernel_size=1), nn.GLU(dim=-2))

    def forward(self, u):                                  # B, H, L
        L = u.size(-1)
        k = self.kernel(L=L)
        k_f = torch.fft.rfft(k, n=2 * L)
        u_f = torch.fft.rfft(u, n=2 * L)
        y = torch.fft.irfft(u_f * k_f, n=2 * L)[..., :L]
        y = y + u * self.D.unsqueeze(-1)
        y = self.dropout(self.activation(y))
        return self.output_linear(y)


class S4DModel(nn.Module):
    def __init__(self, d_input=3, d_output=10, d_model=64, n_layers=4, dropout=0.1):
        super().__init__()
        self.encoder = nn.Linear(d_input, d_model)
        self.s4_layers = nn.ModuleList([S4DLayer(d_model, dropout=dropout) for _ in range(n_layers)])
        self.norms = nn.ModuleList([nn.LayerNorm(d_model) for _ in range(n_layers)])
        self.dropouts = nn.ModuleList([nn.Dropout(dropout) for _ in range(n_layers)])
        self.decoder = nn.Linear(d_model, d_output)

    def forward(self, x, y):
        x = self.encoder(x).transpose(-1, -2)              # B, H, L
        for layer, norm, dropout in zip(self.s4_layers, self.norms, self.dropouts):
            z = norm(x.transpose(-1, -2)).transpose(-1, -2)
            z = dropout(layer(z))
            x = z + x
        x = x.transpose(-1, -2).mean(dim=1)
        return F.cross_entropy(self.decoder(x), y)


# ----------------------------------------------------------------------------- Point Transformer

def knn_query(k, xyz):
    return torch.cdist(xyz, xyz).topk(k, dim=-1, largest=False).indices       # B, N, k


def index_points(points, idx):
    B = points.shape[0]
    batch = torch.arange(B, device=points.device).view(B, 1, 1).expand_as(idx)
    return points[batch, idx]


class PointTransformerLayer(nn.Module):
    def __init__(self, c, share_planes=8, nsample=16):
        super().__init__()
        self.c, self.s, self.nsample = c, share_planes, nsample
        self.linear_q, self.linear_k, self.linear_v = nn.Linear(c, c), nn.Linear(c, c), nn.Linear(c, c)
        self.linear_p = nn.Sequential(nn.Linear(3, 3), nn.BatchNorm1d(3), nn.ReLU(inplace=True), nn.Linear(3, c))
        self.linear_w = nn.Sequential(nn.BatchNorm1d(c), nn.ReLU(inplace=True), nn.Linear(c, c // share_planes),
                                      nn.BatchNorm1d(c // share_planes), nn.ReLU(inplace=True),
                                      nn.Linear(c // share_planes, c // share_planes))
        self.softmax = nn.Softmax(dim=1)

    def forward(self, p, x, idx):                           # p: B, N, 3; x: B, N, c; idx: B, N, ns
        B, N, c = x.shape
        ns, s = idx.shape[-1], self.s
        q, k, v = self.linear_q(x), self.linear_k(x), self.linear_v(x)
        p_r = (index_points(p, idx) - p.unsqueeze(2)).reshape(B * N, ns, 3)
        k = index_points(k, idx).reshape(B * N, ns, c)
        v = index_points(v, idx).reshape(B * N, ns, c)
        for i, layer in enumerate(self.linear_p):
            p_r = layer(p_r.transpose(1, 2).contiguous()).transpose(1, 2).contiguous() if i == 1 else layer(p_r)
        w = k - q.reshape(B * N, 1, c) + p_r
        for i, layer in enumerate(self.linear_w):
            w = layer(w.transpose(1, 2).contiguous()).transpose(1, 2).contiguous() if i % 3 == 0 else layer(w)
        w = self.softmax(w)
        out = ((v + p_r).view(B * N, ns, s, c // s) * w.unsqueeze(2)).sum(1).view(B, N, c)
        return out


class PointTransformerBlock(nn.Module):
    def __init__(self, c, nsample=16):
        super().__init__()
        self.linear1, self.bn1 = nn.Linear(c, c, bias=False), nn.BatchNorm1d(c)
        self.transformer = PointTransformerLayer(c, nsample=nsample)
        self.bn2 = nn.BatchNorm1d(c)
        self.linear3, self.bn3 = nn.Linear(c, c, bias=False), nn.BatchNorm1d(c)

    def bn(self, norm, x):
        return norm(x.transpose(1, 2)).transpose(1, 2)

    def forward(self, p, x, idx):
        identity = x
        x = F.relu(self.bn(self.bn1, self.linear1(x)))
        x = F.relu(self.bn(self.bn2, self.transformer(p, x, idx)))
        x = self.bn(self.bn3, self.linear3(x))
        return F.relu(x + identity)


class PointTransformerSeg(nn.Module):
    def __init__(self, c=32, n_classes=8, nsample=16):
        super().__init__()
        self.nsample = nsample
        self.embed = nn.Sequential(nn.Linear(6, c), nn.ReLU(), nn.Linear(c, c))
        self.blocks = nn.ModuleList([PointTransformerBlock(c, nsample) for _ in range(2)])
        self.head = nn.Sequential(nn.Linear(c, c), nn.ReLU(inplace=True), nn.Dropout(0.3), nn.Linear(c, n_classes))

    def forward(self, xyz, feats, labels):
        idx = knn_query(self.nsample, xyz)
        x = self.embed(torch.cat([xyz, feats], -1))
        for blk in self.blocks:
            x = blk(xyz, x, idx)
        logits = self.head(x)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


# ----------------------------------------------------------------------------- BigGAN

SN = nn.utils.parametrizations.spectral_norm


def snconv(ci, co, k=3, p=1):
    return SN(nn.Conv2d(ci, co, k, padding=p))


class CondBN(nn.Module):
    def __init__(self, ch, cond_dim):
        super().__init__()
        self.bn = nn.BatchNorm2d(ch, affine=False, eps=1e-4, momentum=0.1)
        self.gain = SN(nn.Linear(cond_dim, ch, bias=False))
        self.bias = SN(nn.Linear(cond_dim, ch, bias=False))

    def forward(self, x, y):
        g = (1 + self.gain(y)).view(y.size(0), -1, 1, 1)
        b = self.bias(y).view(y.size(0), -1, 1, 1)
        return self.bn(x) * g + b


class GBlock(nn.Module):
    def __init__(self, ci, co, cond_dim):
        super().__init__()
        self.bn1, self.bn2 = CondBN(ci, cond_dim), CondBN(co, cond_dim)
        self.conv1, self.conv2 = snconv(ci, co), snconv(co, co)
        self.conv_sc = snconv(ci, co, 1, 0)

    def forward(self, x, y):
        h = F.interpolate(F.relu(self.bn1(x, y)), scale_factor=2)
        h = self.conv2(F.relu(self.bn2(self.conv1(h), y)))
        return h + self.conv_sc(F.interpolate(x, scale_factor=2))


class SelfAttention(nn.Module):
    def __init__(self, ch):
        super().__init__()
        self.ch = ch
        self.theta, self.phi = snconv(ch, ch // 8, 1, 0), snconv(ch, ch // 8, 1, 0)
        self.g, self.o = snconv(ch, ch // 2, 1, 0), snconv(ch // 2, ch, 1, 0)
        self.gamma = nn.Parameter(torch.tensor(0.0))

    def forward(self, x):
        B, C, H, W = x.shape
        theta = self.theta(x).view(B, C // 8, H * W)
        phi = F.max_pool2d(self.phi(x), [2, 2]).view(B, C // 8, H * W // 4)
        g = F.max_pool2d(self.g(x), [2, 2]).view(B, C // 2, H * W // 4)
        beta = F.softmax(torch.bmm(theta.transpose(1, 2), phi), -1)
        o = self.o(torch.bmm(g, beta.transpose(1, 2)).view(B, C // 2, H, W))
        return x + self.gamma * o


class BGGenerator(nn.Module):
    def __init__(self, ch=32, dim_z=60, shared_dim=32, n_classes=10):
        super().__init__()
        self.ch, self.n_chunks = ch, 4
        self.z_chunk = dim_z // self.n_chunks
        cond_dim = shared_dim + self.z_chunk
        self.shared = nn.Embedding(n_classes, shared_dim)
        self.linear = SN(nn.Linear(self.z_chunk, 4 * ch * 4 * 4))
        self.blocks = nn.ModuleList([GBlock(4 * ch, 2 * ch, cond_dim), GBlock(2 * ch, 2 * ch, cond_dim),
                                     GBlock(2 * ch, ch, cond_dim)])
        self.attn = SelfAttention(2 * ch)
        self.out_bn = nn.BatchNorm2d(ch)
        self.out_conv = snconv(ch, 3)

    def forward(self, z, y):
        y = self.shared(y)
        zs = torch.split(z, self.z_chunk, 1)
        ys = [torch.cat([y, item], 1) for item in zs[1:]]
        h = self.linear(zs[0]).view(z.size(0), -1, 4, 4)
        for i, blk in enumerate(self.blocks):
            h = blk(h, ys[i])
            if i == 1:
                h = self.attn(h)
        return torch.tanh(self.out_conv(F.relu(self.out_bn(h))))


class DBlock(nn.Module):
    def __init__(self, ci, co, preact=True, down=True):
        super().__init__()
        self.preact, self.down = preact, down
        self.conv1, self.conv2 = snconv(ci, co), snconv(co, co)
        self.conv_sc = snconv(ci, co, 1, 0)

    def forward(self, x):
        h = F.relu(x) if self.preact else x
        h = self.conv2(F.relu(self.conv1(h)))
        if self.down:
            h = F.avg_pool2d(h, 2)
        sc = self.conv_sc(x)
        if self.down:
            sc = F.avg_pool2d(sc, 2)
        return h + sc


class BGDiscriminator(nn.Module):
    def __init__(self, ch=32, n_classes=10):
        super().__init__()
        self.blocks = nn.ModuleList([DBlock(3, ch, preact=False), DBlock(ch, 2 * ch), DBlock(2 * ch, 4 * ch),
                                     DBlock(4 * ch, 4 * ch, down=False)])
        self.attn = SelfAttention(ch)
        self.linear = SN(nn.Linear(4 * ch, 1))
        self.embed = SN(nn.Embedding(n_classes, 4 * ch))

    def forward(self, x, y):
        h = x
        for i, blk in enumerate(self.blocks):
            h = blk(h)
            if i == 0:
                h = self.attn(h)
        h = torch.sum(F.relu(h), [2, 3])
        out = self.linear(h)
        return out + torch.sum(self.embed(y) * h, 1, keepdim=True)


def ortho_loss(model, strength=1e-4):
    total = 0.0
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            w = m.weight.view(m.weight.shape[0], -1)
            gram = torch.mm(w, w.t()) * (1.0 - torch.eye(w.shape[0], device=w.device))
            total = total + gram.pow(2).sum()
    return strength * total


class BigGAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.G, self.D = BGGenerator(), BGDiscriminator()

    def forward(self, x_real, y_real, z, y_fake):
        fake = self.G(z, y_fake)
        d_real = self.D(x_real, y_real)
        d_fake = self.D(fake.detach(), y_fake)
        loss_d = torch.mean(F.relu(1.0 - d_real)) + torch.mean(F.relu(1.0 + d_fake))
        loss_g = -torch.mean(self.D(fake, y_fake))
        return loss_d + loss_g + ortho_loss(self.G), loss_d.detach()


# ----------------------------------------------------------------------------- DINO

class ViTBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h = heads
        self.norm1, self.qkv, self.proj = nn.LayerNorm(d, eps=1e-6), nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.norm2 = nn.LayerNorm(d, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(self.norm1(x)).reshape(B, N, 3, self.h, C // self.h).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = ((q @ k.transpose(-2, -1)) * (C // self.h) ** -0.5).softmax(dim=-1)
        x = x + self.proj((attn @ v).transpose(1, 2).reshape(B, N, C))
        return x + self.mlp(self.norm2(x))


class TinyViT(nn.Module):
    def __init__(self, img=32, patch=4, d=64, depth=2, heads=4):
        super().__init__()
        self.patch = patch
        self.patch_embed = nn.Conv2d(3, d, patch, stride=patch)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.pos_embed = nn.Parameter(torch.randn(1, (img // patch) ** 2 + 1, d) * 0.02)
        self.blocks = nn.ModuleList([ViTBlock(d, heads) for _ in range(depth)])
        self.norm = nn.LayerNorm(d, eps=1e-6)

    def interpolate_pos_encoding(self, x, w, h):
        npatch = x.shape[1] - 1
        N = self.pos_embed.shape[1] - 1
        if npatch == N and w == h:
            return self.pos_embed
        class_pos_embed = self.pos_embed[:, 0]
        patch_pos_embed = self.pos_embed[:, 1:]
        dim = x.shape[-1]
        w0, h0 = w // self.patch, h // self.patch
        M = int(math.sqrt(N))
        sx, sy = float(w0 + 0.1) / M, float(h0 + 0.1) / M          # DINOv2's form (DINO's w0 / sqrt(N) is a
        patch_pos_embed = F.interpolate(                            # traced tensor, which interpolate refuses)
            patch_pos_embed.reshape(1, M, M, dim).permute(0, 3, 1, 2), scale_factor=(sx, sy), mode="bicubic")
        patch_pos_embed = patch_pos_embed.permute(0, 2, 3, 1).view(1, -1, dim)
        return torch.cat((class_pos_embed.unsqueeze(0), patch_pos_embed), dim=1)

    def forward(self, x):
        B, nc, w, h = x.shape
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
        x = x + self.interpolate_pos_encoding(x, w, h)
        for blk in self.blocks:
            x = blk(x)
        return self.norm(x)[:, 0]


class DINOHead(nn.Module):
    def __init__(self, in_dim, out_dim=256, hidden=128, bottleneck=32):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU(),
                                 nn.Linear(hidden, bottleneck))
        self.last_layer = nn.utils.parametrizations.weight_norm(nn.Linear(bottleneck, out_dim, bias=False))
        with torch.no_grad():
            self.last_layer.parametrizations.weight.original0.fill_(1)
        self.last_layer.parametrizations.weight.original0.requires_grad = False

    def forward(self, x):
        x = F.normalize(self.mlp(x), dim=-1, p=2)
        return self.last_layer(x)


class MultiCropWrapper(nn.Module):
    def __init__(self, backbone, head):
        super().__init__()
        self.backbone, self.head = backbone, head

    def forward(self, x):
        if not isinstance(x, list):
            x = [x]
        idx_crops = torch.cumsum(torch.unique_consecutive(torch.tensor([inp.shape[-1] for inp in x]),
                                                          return_counts=True)[1], 0)
        start_idx, output = 0, torch.empty(0).to(x[0].device)
        for end_idx in idx_crops:
            _out = self.backbone(torch.cat(x[start_idx: end_idx]))
            output = torch.cat((output, _out))
            start_idx = end_idx
        return self.head(output)


class DINO(nn.Module):
    def __init__(self, out_dim=256, ncrops=6, student_temp=0.1, teacher_temp=0.04, center_momentum=0.9):
        super().__init__()
        self.student = MultiCropWrapper(TinyViT(), DINOHead(64, out_dim))
        self.teacher = copy.deepcopy(self.student)
        self.teacher.requires_grad_(False)
        self.ncrops, self.student_temp, self.teacher_temp = ncrops, student_temp, teacher_temp
        self.center_momentum = center_momentum
        self.register_buffer("center", torch.zeros(1, out_dim))

    def forward(self, g1, g2, l1, l2, l3, l4):
        crops = [g1, g2, l1, l2, l3, l4]
        with torch.no_grad():
            teacher_output = self.teacher(crops[:2])
        student_output = self.student(crops)
        student_out = (student_output / self.student_temp).chunk(self.ncrops)
        teacher_out = F.softmax((teacher_output - self.center) / self.teacher_temp, dim=-1).detach().chunk(2)
        total_loss, n_loss_terms = 0, 0
        for iq, q in enumerate(teacher_out):
            for v in range(len(student_out)):
                if v == iq:
                    continue
                loss = torch.sum(-q * F.log_softmax(student_out[v], dim=-1), dim=-1)
                total_loss += loss.mean()
                n_loss_terms += 1
        total_loss /= n_loss_terms
        with torch.no_grad():
            batch_center = torch.sum(teacher_output, dim=0, keepdim=True) / len(teacher_output)
            self.center = self.center * self.center_momentum + batch_center * (1 - self.center_momentum)
        return total_loss


# ----------------------------------------------------------------------------- MoCo v2

def moco_encoder(dim=64):
    def cbr(ci, co, s):
        return [nn.Conv2d(ci, co, 3, stride=s, padding=1, bias=False), nn.BatchNorm2d(co), nn.ReLU(inplace=True)]
    return nn.Sequential(*cbr(3, 32, 1), *cbr(32, 64, 2), *cbr(64, 96, 2), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
                         nn.Linear(96, 96), nn.ReLU(), nn.Linear(96, dim))


class MoCo(nn.Module):
    def __init__(self, dim=64, K=1024, m=0.999, T=0.2):
        super().__init__()
        self.K, self.m, self.T = K, m, T
        self.encoder_q, self.encoder_k = moco_encoder(dim), moco_encoder(dim)
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data.copy_(param_q.data)
            param_k.requires_grad = False
        self.register_buffer("queue", F.normalize(torch.randn(dim, K), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data = param_k.data * self.m + param_q.data * (1.0 - self.m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)
        self.queue[:, ptr: ptr + batch_size] = keys.T
        ptr = (ptr + batch_size) % self.K
        self.queue_ptr[0] = ptr

    def forward(self, im_q, im_k):
        q = F.normalize(self.encoder_q(im_q), dim=1)
        with torch.no_grad():
            self._momentum_update_key_encoder()
            idx_shuffle = torch.randperm(im_k.shape[0], device=im_k.device)
            idx_unshuffle = torch.argsort(idx_shuffle)
            k = F.normalize(self.encoder_k(im_k[idx_shuffle]), dim=1)
            k = k[idx_unshuffle]
        l_pos = torch.einsum("nc,nc->n", [q, k]).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", [q, self.queue.clone().detach()])
        logits = torch.cat([l_pos, l_neg], dim=1) / self.T
        labels = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
        loss = F.cross_entropy(logits, labels)
        self._dequeue_and_enqueue(k)
        return loss


# ----------------------------------------------------------------------------- FCOS

class Scale(nn.Module):
    def __init__(self, init_value=1.0):
        super().__init__()
        self.scale = nn.Parameter(torch.tensor(init_value, dtype=torch.float32))

    def forward(self, x):
        return x * self.scale


def conv_gn_relu(ci, co, stride=1):
    return nn.Sequential(nn.Conv2d(ci, co, 3, stride=stride, padding=1), nn.GroupNorm(8, co), nn.ReLU(inplace=True))


class FCOS(nn.Module):
    STRIDES = (8, 16, 32)

    def __init__(self, n_classes=5, c=32):
        super().__init__()
        def cbr(ci, co, s):
            return nn.Sequential(nn.Conv2d(ci, co, 3, stride=s, padding=1, bias=False), nn.BatchNorm2d(co),
                                 nn.ReLU(inplace=True))
        self.c2 = nn.Sequential(cbr(3, 16, 2), cbr(16, 24, 2))                   # /4
        self.c3, self.c4, self.c5 = cbr(24, 32, 2), cbr(32, 48, 2), cbr(48, 64, 2)
        self.lateral = nn.ModuleList([nn.Conv2d(ci, c, 1) for ci in (32, 48, 64)])
        self.fpn_out = nn.ModuleList([nn.Conv2d(c, c, 3, padding=1) for _ in range(3)])
        self.cls_tower = nn.Sequential(conv_gn_relu(c, c), conv_gn_relu(c, c))
        self.bbox_tower = nn.Sequential(conv_gn_relu(c, c), conv_gn_relu(c, c))
        self.cls_logits = nn.Conv2d(c, n_classes, 3, padding=1)
        self.bbox_pred = nn.Conv2d(c, 4, 3, padding=1)
        self.centerness = nn.Conv2d(c, 1, 3, padding=1)
        self.scales = nn.ModuleList([Scale(1.0) for _ in range(3)])
        nn.init.constant_(self.cls_logits.bias, -math.log((1 - 0.01) / 0.01))
        self.n_classes = n_classes

    @staticmethod
    def points(h, w, stride, device):
        ys, xs = torch.meshgrid(torch.arange(h, device=device) * stride, torch.arange(w, device=device) * stride,
                                indexing="ij")
        return torch.stack([xs.reshape(-1), ys.reshape(-1)], -1).float() + stride // 2

    def forward(self, images, labels, gt_boxes):
        c3 = self.c3(self.c2(images))
        c4 = self.c4(c3)
        c5 = self.c5(c4)
        lat = [l(f) for l, f in zip(self.lateral, (c3, c4, c5))]
        p5 = lat[2]
        p4 = lat[1] + F.interpolate(p5, size=lat[1].shape[-2:], mode="nearest")
        p3 = lat[0] + F.interpolate(p4, size=lat[0].shape[-2:], mode="nearest")
        feats = [o(p) for o, p in zip(self.fpn_out, (p3, p4, p5))]
        B = images.shape[0]
        cls_all, reg_all, ctr_all, pts_all = [], [], [], []
        for f, scale, stride in zip(feats, self.scales, self.STRIDES):
            ct, bt = self.cls_tower(f), self.bbox_tower(f)
            cls_all.append(self.cls_logits(ct).permute(0, 2, 3, 1).reshape(B, -1, self.n_classes))
            reg_all.append((torch.exp(scale(self.bbox_pred(bt))) * stride).permute(0, 2, 3, 1).reshape(B, -1, 4))
            ctr_all.append(self.centerness(bt).permute(0, 2, 3, 1).reshape(B, -1))
            pts_all.append(self.points(f.shape[-2], f.shape[-1], stride, f.device))
        cls_logits, ltrb, ctr = torch.cat(cls_all, 1), torch.cat(reg_all, 1), torch.cat(ctr_all, 1)
        pts = torch.cat(pts_all, 0)[None].expand(B, -1, -1)
        pos = labels >= 0
        num_pos = pos.sum().clamp(min=1).float()
        gt_cls = F.one_hot(labels.clamp(min=0), self.n_classes).to(cls_logits.dtype) * pos[..., None]
        loss_cls = sigmoid_focal_loss(cls_logits, gt_cls, alpha=0.25, gamma=2.0, reduction="sum") / num_pos
        pred_boxes = torch.cat([pts - ltrb[..., :2], pts + ltrb[..., 2:]], -1)[pos]
        gt = gt_boxes[pos]
        loss_box = generalized_box_iou_loss(pred_boxes, gt, reduction="sum") / num_pos
        p = pts[pos]
        t = torch.cat([p - gt[:, :2], gt[:, 2:] - p], -1)
        lr, tb = t[:, [0, 2]], t[:, [1, 3]]
        ctr_t = torch.sqrt((lr.min(-1)[0] / lr.max(-1)[0]) * (tb.min(-1)[0] / tb.max(-1)[0]))
        loss_ctr = F.binary_cross_entropy_with_logits(ctr[pos], ctr_t, reduction="sum") / num_pos
        return loss_cls + loss_box + loss_ctr, {"cls": loss_cls.detach(), "box": loss_box.detach()}


# ----------------------------------------------------------------------------- SAC

LOG_STD_MAX, LOG_STD_MIN = 2, -5


class SoftQNetwork(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden=256):
        super().__init__()
        self.fc1, self.fc2, self.fc3 = nn.Linear(obs_dim + act_dim, hidden), nn.Linear(hidden, hidden), nn.Linear(hidden, 1)

    def forward(self, x, a):
        x = torch.cat([x, a], 1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


class Actor(nn.Module):
    def __init__(self, obs_dim, act_dim, hidden=256):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(obs_dim, hidden), nn.Linear(hidden, hidden)
        self.fc_mean, self.fc_logstd = nn.Linear(hidden, act_dim), nn.Linear(hidden, act_dim)
        self.register_buffer("action_scale", torch.full((act_dim,), 2.0))
        self.register_buffer("action_bias", torch.zeros(act_dim))

    def forward(self, x):
        x = F.relu(self.fc2(F.relu(self.fc1(x))))
        mean = self.fc_mean(x)
        log_std = torch.tanh(self.fc_logstd(x))
        log_std = LOG_STD_MIN + 0.5 * (LOG_STD_MAX - LOG_STD_MIN) * (log_std + 1)
        return mean, log_std

    def get_action(self, x):
        mean, log_std = self(x)
        std = log_std.exp()
        normal = torch.distributions.Normal(mean, std)
        x_t = normal.rsample()
        y_t = torch.tanh(x_t)
        action = y_t * self.action_scale + self.action_bias
        log_prob = normal.log_prob(x_t)
        log_prob = log_prob - torch.log(self.action_scale * (1 - y_t.pow(2)) + 1e-6)
        log_prob = log_prob.sum(1, keepdim=True)
        return action, log_prob, torch.tanh(mean) * self.action_scale + self.action_bias


class SAC(nn.Module):
    def __init__(self, obs_dim=17, act_dim=6, gamma=0.99):
        super().__init__()
        self.actor = Actor(obs_dim, act_dim)
        self.qf1, self.qf2 = SoftQNetwork(obs_dim, act_dim), SoftQNetwork(obs_dim, act_dim)
        self.qf1_target, self.qf2_target = copy.deepcopy(self.qf1), copy.deepcopy(self.qf2)
        self.qf1_target.requires_grad_(False)
        self.qf2_target.requires_grad_(False)
        self.log_alpha = nn.Parameter(torch.zeros(1))
        self.target_entropy = -float(act_dim)
        self.gamma = gamma

    def forward(self, obs, actions, rewards, next_obs, dones):
        alpha = self.log_alpha.exp().item()
        with torch.no_grad():
            next_actions, next_log_pi, _ = self.actor.get_action(next_obs)
            q1_next = self.qf1_target(next_obs, next_actions)
            q2_next = self.qf2_target(next_obs, next_actions)
            min_qf_next = torch.min(q1_next, q2_next) - alpha * next_log_pi
            next_q_value = rewards.flatten() + (1 - dones.flatten()) * self.gamma * min_qf_next.view(-1)
        qf1_a = self.qf1(obs, actions).view(-1)
        qf2_a = self.qf2(obs, actions).view(-1)
        qf_loss = F.mse_loss(qf1_a, next_q_value) + F.mse_loss(qf2_a, next_q_value)
        pi, log_pi, _ = self.actor.get_action(obs)
        min_qf_pi = torch.min(self.qf1(obs, pi), self.qf2(obs, pi))
        actor_loss = ((alpha * log_pi) - min_qf_pi).mean()
        alpha_loss = (-self.log_alpha.exp() * (log_pi.detach() + self.target_entropy)).mean()
        return qf_loss + actor_loss + alpha_loss, qf1_a.mean().detach()


# ----------------------------------------------------------------------------- speech enhancement (CRM)

class EncBlock(nn.Module):
    def __init__(self, ci, co):
        super().__init__()
        self.conv = nn.Conv2d(ci, co, (3, 3), stride=(2, 1), padding=(1, 1))
        self.bn = nn.BatchNorm2d(co)

    def forward(self, x):
        return F.elu(self.bn(self.conv(x)))


class DecBlock(nn.Module):
    def __init__(self, ci, co, last=False):
        super().__init__()
        self.conv = nn.ConvTranspose2d(ci, co, (3, 3), stride=(2, 1), padding=(1, 1))
        self.bn = None if last else nn.BatchNorm2d(co)

    def forward(self, x):
        x = self.conv(x)
        return x if self.bn is None else F.elu(self.bn(x))


def si_snr(est, ref, eps=1e-8):
    est = est - est.mean(-1, keepdim=True)
    ref = ref - ref.mean(-1, keepdim=True)
    s_target = (est * ref).sum(-1, keepdim=True) * ref / (ref.pow(2).sum(-1, keepdim=True) + eps)
    e_noise = est - s_target
    return 10 * torch.log10(s_target.pow(2).sum(-1) / (e_noise.pow(2).sum(-1) + eps) + eps)


class CRMEnhancer(nn.Module):
    def __init__(self, n_fft=256, hop=64, c=16, hidden=128):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft), persistent=False)
        self.enc1, self.enc2 = EncBlock(1, c), EncBlock(c, c)
        f2 = (n_fft // 2 + 1 + 1) // 2
        f2 = (f2 + 1) // 2
        self.f2, self.c = f2, c
        self.gru = nn.GRU(c * f2, hidden, batch_first=True)
        self.fc = nn.Linear(hidden, c * f2)
        self.dec2, self.dec1 = DecBlock(2 * c, c), DecBlock(2 * c, 2, last=True)

    def forward(self, noisy, clean):
        spec = torch.stft(noisy, self.n_fft, self.hop, window=self.window, return_complex=True)   # B, F, T
        mag = spec.abs()
        x = torch.log1p(mag).unsqueeze(1)
        e1 = self.enc1(x)
        e2 = self.enc2(e1)
        B, C, Fq, T = e2.shape
        r, _ = self.gru(e2.permute(0, 3, 1, 2).reshape(B, T, C * Fq))
        r = self.fc(r).view(B, T, C, Fq).permute(0, 2, 3, 1)
        d2 = self.dec2(torch.cat([r, e2], 1))
        m = self.dec1(torch.cat([d2, e1], 1))                          # B, 2, F, T
        m_r, m_i = m[:, 0], m[:, 1]
        mask_mag = torch.tanh(torch.sqrt(m_r ** 2 + m_i ** 2 + 1e-8))
        phase = torch.angle(spec) + torch.atan2(m_i, m_r)
        est_mag = mag * mask_mag
        est_spec = torch.complex(est_mag * torch.cos(phase), est_mag * torch.sin(phase))
        est = torch.istft(est_spec, self.n_fft, self.hop, window=self.window, length=noisy.shape[-1])
        clean_mag = torch.stft(clean, self.n_fft, self.hop, window=self.window, return_complex=True).abs()
        loss = -si_snr(est, clean).mean() + F.l1_loss((est_mag + 1e-8) ** 0.3, (clean_mag + 1e-8) ** 0.3)
        return loss


# ----------------------------------------------------------------------------- scVI

class FCLayers(nn.Module):
    def __init__(self, n_in, n_out, n_cat, dropout=0.1):
        super().__init__()
        self.n_cat = n_cat
        self.layer = nn.Sequential(nn.Linear(n_in + n_cat, n_out), nn.BatchNorm1d(n_out, momentum=0.01, eps=0.001),
                                   nn.ReLU(), nn.Dropout(p=dropout))

    def forward(self, x, batch_index):
        one_hot = F.one_hot(batch_index.squeeze(-1), self.n_cat).float()
        return self.layer(torch.cat([x, one_hot], dim=-1))


def log_zinb_positive(x, mu, theta, pi, eps=1e-8):
    softplus_pi = F.softplus(-pi)
    log_theta_eps = torch.log(theta + eps)
    log_theta_mu_eps = torch.log(theta + mu + eps)
    pi_theta_log = -pi + theta * (log_theta_eps - log_theta_mu_eps)
    case_zero = F.softplus(pi_theta_log) - softplus_pi
    mul_case_zero = torch.mul((x < eps).type(torch.float32), case_zero)
    case_non_zero = (-softplus_pi + pi_theta_log + x * (torch.log(mu + eps) - log_theta_mu_eps)
                     + torch.lgamma(x + theta) - torch.lgamma(theta) - torch.lgamma(x + 1))
    mul_case_non_zero = torch.mul((x > eps).type(torch.float32), case_non_zero)
    return mul_case_zero + mul_case_non_zero


class SCVI(nn.Module):
    def __init__(self, n_genes=1000, n_batch=3, n_hidden=128, n_latent=10):
        super().__init__()
        self.n_batch = n_batch
        self.z_encoder = FCLayers(n_genes, n_hidden, n_batch)
        self.mean_encoder, self.var_encoder = nn.Linear(n_hidden, n_latent), nn.Linear(n_hidden, n_latent)
        self.px_decoder = FCLayers(n_latent, n_hidden, n_batch, dropout=0.0)
        self.px_scale_decoder = nn.Sequential(nn.Linear(n_hidden, n_genes), nn.Softmax(dim=-1))
        self.px_dropout_decoder = nn.Linear(n_hidden, n_genes)
        self.px_r = nn.Parameter(torch.randn(n_genes))

    def forward(self, x, batch_index):
        library = torch.log(x.sum(1)).unsqueeze(1)
        q = self.z_encoder(torch.log1p(x), batch_index)
        q_m = self.mean_encoder(q)
        q_v = torch.exp(self.var_encoder(q)) + 1e-4
        qz = torch.distributions.Normal(q_m, q_v.sqrt())
        z = qz.rsample()
        px = self.px_decoder(z, batch_index)
        px_scale = self.px_scale_decoder(px)
        px_dropout = self.px_dropout_decoder(px)
        px_rate = torch.exp(library) * px_scale
        px_r = torch.exp(self.px_r)
        reconst = -log_zinb_positive(x, px_rate, px_r, px_dropout).sum(dim=-1)
        kl = torch.distributions.kl_divergence(qz, torch.distributions.Normal(torch.zeros_like(q_m),
                                                                              torch.ones_like(q_v))).sum(dim=1)
        return torch.mean(reconst + kl), kl.mean().detach()


# ----------------------------------------------------------------------------- old-school CNN

class OldSchoolCNN(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 5, padding=2)
        self.rrelu = nn.RReLU(1 / 8, 1 / 3)
        self.lrn = nn.LocalResponseNorm(5, alpha=1e-4, beta=0.75, k=2.0)
        self.fpool = nn.FractionalMaxPool2d(2, output_ratio=0.7)
        self.conv2 = nn.Conv2d(32, 64, 3, padding=1)
        self.fad = nn.FeatureAlphaDropout(0.1)
        self.lppool = nn.LPPool2d(2, 2)
        self.att = nn.Conv2d(64, 64, 1)
        self.sm2d = nn.Softmax2d()
        self.conv3 = nn.Conv2d(64, 96, 3, padding=1)
        self.fc = nn.Linear(96, n_classes)

    def forward(self, x, y):
        x = self.fpool(self.lrn(self.rrelu(self.conv1(x))))
        x = self.lppool(self.fad(F.selu(self.conv2(x))))
        x = x * self.sm2d(self.att(x)) * x.shape[1]
        x = F.rrelu(self.conv3(x), training=self.training)
        logits = self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))
        return F.multi_margin_loss(logits, y) + F.cross_entropy(logits, y, label_smoothing=0.1)


# ----------------------------------------------------------------------------- Linformer (checkpointed)

class LinformerSelfAttention(nn.Module):
    def __init__(self, dim, seq_len, k=32, heads=4, dropout=0.1):
        super().__init__()
        self.seq_len, self.k, self.heads, self.dim_head = seq_len, k, heads, dim // heads
        self.to_q = nn.Linear(dim, dim, bias=False)
        self.to_k = nn.Linear(dim, dim, bias=False)
        self.to_v = nn.Linear(dim, dim, bias=False)
        self.proj_k = nn.Parameter(torch.zeros(seq_len, k).uniform_(-1 / math.sqrt(k), 1 / math.sqrt(k)))
        # share_kv: lucidrains' `self.proj_v = self.proj_k` registers one Parameter under two names, which
        # torch.jit.trace refuses ("TracedModules don't support parameter sharing"), so it is read twice here
        self.dropout = nn.Dropout(dropout)
        self.to_out = nn.Linear(dim, dim)

    def forward(self, x, mask):
        b, n, d = x.shape
        d_h, h, k = self.dim_head, self.heads, self.k
        queries = self.to_q(x)
        keys = self.to_k(x).masked_fill(~mask[..., None], 0.0)
        values = self.to_v(x).masked_fill(~mask[..., None], 0.0)
        keys = torch.einsum("bnd,nk->bkd", keys, self.proj_k[:n])
        values = torch.einsum("bnd,nk->bkd", values, self.proj_k[:n])
        queries = queries.reshape(b, n, h, -1).transpose(1, 2)
        keys, values = (t.reshape(b, k, -1, d_h).transpose(1, 2).expand(-1, h, -1, -1) for t in (keys, values))
        dots = torch.einsum("bhnd,bhkd->bhnk", queries, keys) * (d_h ** -0.5)
        attn = self.dropout(dots.softmax(dim=-1))
        out = torch.einsum("bhnk,bhkd->bhnd", attn, values)
        return self.to_out(out.transpose(1, 2).reshape(b, n, -1))


class LinformerLayer(nn.Module):
    def __init__(self, dim, seq_len):
        super().__init__()
        self.ln1, self.attn = nn.LayerNorm(dim), LinformerSelfAttention(dim, seq_len)
        self.ln2 = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * dim, dim))

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)
        return x + self.ff(self.ln2(x))


class Linformer(nn.Module):
    def __init__(self, vocab=256, dim=64, seq_len=128, depth=3, n_classes=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.pos = nn.Parameter(torch.randn(seq_len, dim) * 0.02)
        self.layers = nn.ModuleList([LinformerLayer(dim, seq_len) for _ in range(depth)])
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, n_classes)
        self.gradient_checkpointing = True

    def forward(self, tokens, mask, y):
        from torch.utils.checkpoint import checkpoint
        x = self.emb(tokens) + self.pos[: tokens.shape[1]]
        for layer in self.layers:
            if self.gradient_checkpointing and self.training:
                x = checkpoint(layer, x, mask, use_reentrant=False)
            else:
                x = layer(x, mask)
        x = self.norm(x)
        m = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * m).sum(1) / m.sum(1)
        return F.cross_entropy(self.head(pooled), y)


NAMES = ["film_unet", "esm2", "s4d", "point_transformer", "biggan", "dino", "moco", "fcos", "sac", "crm_enhance",
         "scvi", "oldschool_cnn", "linformer_ckpt"]


def fcos_targets(B, S, g, n_classes=5):
    """Per-point labels (-1: background) and the xyxy box each positive point regresses to (a box around it)."""
    pts = []
    for s in FCOS.STRIDES:
        n = S // s
        ys, xs = torch.meshgrid(torch.arange(n) * s, torch.arange(n) * s, indexing="ij")
        pts.append(torch.stack([xs.reshape(-1), ys.reshape(-1)], -1).double() + s // 2)
    pts = torch.cat(pts, 0)
    P = pts.shape[0]
    pos = torch.rand((B, P), generator=g) < 0.15
    labels = torch.where(pos, torch.randint(0, n_classes, (B, P), generator=g), torch.full((B, P), -1))
    ltrb = 4 + 20 * torch.rand((B, P, 4), generator=g, dtype=torch.float64)
    boxes = torch.cat([pts[None] - ltrb[..., :2], pts[None] + ltrb[..., 2:]], -1)
    return labels, boxes


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    if name == "film_unet":
        side = max(32, (S * 2 // 3) // 8 * 8)                                  # 64 at --image 96
        hr = torch.rand((B, 3, side, side), generator=g, dtype=torch.float64)
        lr = F.avg_pool2d(hr, 2) + 0.05 * torch.randn((B, 3, side // 2, side // 2), generator=g, dtype=torch.float64)
        sigma = 0.01 + 0.1 * torch.rand((B,), generator=g, dtype=torch.float64)
        return FiLMUNet(), [lr.to(dtype), torch.randint(0, 4, (B,), generator=g), sigma.to(dtype), hr.to(dtype)]
    if name == "esm2":
        L = 64
        tokens = torch.randint(4, 24, (B, L + 2), generator=g)
        lengths = L - torch.randint(0, 12, (B,), generator=g)
        lengths[0] = L
        labels = torch.full((B, L + 2), -100)
        for b in range(B):
            n = int(lengths[b])
            sel = torch.rand((n,), generator=g) < 0.15
            sel[0] = True
            pos = torch.nonzero(sel).flatten() + 1
            labels[b, pos] = tokens[b, pos]
            tokens[b, pos] = 32                                                 # <mask>
            tokens[b, 0] = 0                                                    # <cls>
            tokens[b, n + 1] = 2                                                # <eos>
            tokens[b, n + 2:] = 1                                               # <pad>
        contacts = (torch.rand((B, L, L), generator=g) < 0.1).to(dtype)
        return ESM2(), [tokens, labels, contacts]
    if name == "s4d":
        return S4DModel(), [common.float_input((B, 256, 3), dtype, g), common.token_ids((B,), 10, g)]
    if name == "point_transformer":
        N = 256
        xyz = torch.rand((B, N, 3), generator=g, dtype=torch.float64).to(dtype)
        return PointTransformerSeg(), [xyz, common.float_input((B, N, 3), dtype, g), common.token_ids((B, N), 8, g)]
    if name == "biggan":
        x = (2 * torch.rand((B, 3, 32, 32), generator=g, dtype=torch.float64) - 1).to(dtype)
        return BigGAN(), [x, common.token_ids((B,), 10, g), common.float_input((B, 60), dtype, g),
                          common.token_ids((B,), 10, g)]
    if name == "dino":
        return DINO(), ([common.float_input((B, 3, 32, 32), dtype, g) for _ in range(2)] +
                        [common.float_input((B, 3, 16, 16), dtype, g) for _ in range(4)])
    if name == "moco":
        Bm = 2 * B
        return MoCo(), [common.float_input((Bm, 3, 32, 32), dtype, g), common.float_input((Bm, 3, 32, 32), dtype, g)]
    if name == "fcos":
        side = max(64, S // 32 * 32)                                            # 96 at --image 96
        labels, boxes = fcos_targets(B, side, g)
        return FCOS(), [common.float_input((B, 3, side, side), dtype, g), labels, boxes.to(dtype)]
    if name == "sac":
        R, od, ad = 64 * B, 17, 6
        return SAC(obs_dim=od, act_dim=ad), [
            common.float_input((R, od), dtype, g), (2 * torch.rand((R, ad), generator=g, dtype=torch.float64) - 1).to(dtype),
            common.float_input((R,), dtype, g), common.float_input((R, od), dtype, g),
            (torch.rand((R,), generator=g) < 0.05).to(dtype)]
    if name == "crm_enhance":
        n = 8000
        clean = 0.3 * torch.randn((B, n), generator=g, dtype=torch.float64)
        noisy = clean + 0.1 * torch.randn((B, n), generator=g, dtype=torch.float64)
        return CRMEnhancer(), [noisy.to(dtype), clean.to(dtype)]
    if name == "scvi":
        cells, genes = 64 * B, 1000
        rate = 3.0 * torch.rand((genes,), generator=g, dtype=torch.float64) ** 3
        x = torch.poisson(rate.expand(cells, genes).contiguous(), generator=g)
        x[:, 0] += 1                                                            # no empty cell
        return SCVI(n_genes=genes), [x.to(dtype), torch.randint(0, 3, (cells, 1), generator=g)]
    if name == "oldschool_cnn":
        side = max(32, (S * 2 // 3) // 16 * 16)                                 # 64 at --image 96
        return OldSchoolCNN(), [common.float_input((2 * B, 3, side, side), dtype, g), common.token_ids((2 * B,), 10, g)]
    if name == "linformer_ckpt":
        n = 128
        lengths = n - torch.randint(0, 32, (B,), generator=g)
        lengths[0] = n
        mask = torch.arange(n)[None] < lengths[:, None]
        return Linformer(seq_len=n), [common.token_ids((B, n), 256, g), mask, common.token_ids((B,), 4, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen12.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
