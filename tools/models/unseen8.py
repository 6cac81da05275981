#!/usr/bin/env python3
"""unseen8.py — an eighth set of models nobody tuned rkmate for
(after tools/models/unseen.py ... unseen7.py), all small and written as users
of torch 2.x write them today.  Each has idioms the other sets do not:

A Llama decoder as Meta's reference writes it: the builtin torch.nn.RMSNorm
(aten::rms_norm), SwiGLU w2(silu(w1 x) * w3 x), rotary embeddings as
freqs_cis = torch.polar(ones_like(freqs), freqs) from a float buffer of
torch.outer(t, inv_freq), queries and keys cast .float(), reshaped to pairs,
torch.view_as_complex, multiplied by freqs_cis viewed for broadcast,
torch.view_as_real(...).flatten(3) and .type_as back; grouped-query attention
by F.scaled_dot_product_attention(is_causal=True, enable_gqa=True) with fewer
key/value heads than query heads, and an output head tied to the token
embedding.

A BiGRU-CRF tagger: nn.Embedding with padding_idx, a two-layer bidirectional
batch_first nn.GRU with dropout between layers started from a learned h0
parameter expanded over the batch and .contiguous(), the embedding
concatenated to the GRU output (a second reader of the GRU input), emissions,
a CRF log-partition unrolled over time (logsumexp of alpha.unsqueeze(2) +
transitions + emissions, masked blend for padding), the gold path score by
gather of emissions, advanced indexing trans[tags[:, :-1], tags[:, 1:]] and
the end transition at the last real position found by gather of the length
- 1; the final hidden state h_n is returned too.

A DeepSets / Set-Transformer readout: a per-element phi MLP, sum pooling
h.sum(1) whose input h is read again by a permutation-equivariant layer
lam(h) - gam(h.sum(1) / N) with ELU, pooling by multihead attention from a
learned seed expanded over the batch, amax pooling, and F.embedding_bag
(mode='sum') of 2-D category ids with per_sample_weights that come from a
sigmoid gate of the set features (so they need a gradient).

A SimCLR + BYOL contrastive head: two views of one input (the input and its
torch.flip along the width, scaled by a buffer) each sent through one shared
CNN encoder with BatchNorm (two calls, so its running statistics move twice),
a Linear-BatchNorm1d-ReLU-Linear projector, F.normalize, the NT-Xent logits
z @ z.T / tau with the diagonal masked_fill-ed by -inf through a
torch.eye(dtype=bool) built in forward, cross_entropy against
(arange + B) % 2B labels, and a BYOL predictor regressed on the detached
other view by 2 - 2 F.cosine_similarity; a dict output.

An ArcFace / prototype classifier: a CNN embedder with CELU and Hardtanh,
BatchNorm1d(affine=False) embeddings, cosine logits
F.linear(F.normalize(x), F.normalize(W)), torch.acos of the clamped cosine,
cos(theta + m), the easy-margin torch.where(cos > th, ...), a one-hot made by
in-place scatter_ into zeros_like, sub-center ArcFace (a (C*K, D) weight
viewed (B, C, K) and amax-ed over K), and prototype logits by
F.cosine_similarity broadcast against a learned prototype matrix.

An encoder-decoder on nn.TransformerEncoder / nn.TransformerDecoder with
batch_first=True, norm_first=True, activation="gelu", bias=False decoder
layers, final LayerNorm(bias=False), enable_nested_tensor=False, a bool
src_key_padding_mask also given as memory_key_padding_mask, the float causal
mask from nn.Transformer.generate_square_subsequent_mask(T, device, dtype) with
tgt_is_causal=True, embeddings scaled by sqrt(d) plus a learned positional
parameter sliced to the length.

A Perceiver: learned latents (nn.Parameter expanded over the batch), Fourier
position features built in forward (torch.linspace, torch.meshgrid with
indexing="ij", torch.stack, bands times pi, sin and cos concatenated) expanded
and concatenated to the pixels, one nn.MultiheadAttention(batch_first=True,
kdim=vdim != embed_dim, need_weights=False) cross-attention applied twice with
shared weights, latent self-attention blocks in between, mean over latents.

A ConvNeXt V1/V2: patchify stem conv 4/4, timm's LayerNorm2d (F.layer_norm of
the permuted map, permuted back), 7x7 depthwise Conv2d, permute to channels
last, nn.LayerNorm(eps=1e-6), Linear, GELU(approximate='tanh'), V2's Global
Response Normalisation (torch.norm(x, p=2, dim=(1, 2), keepdim=True) divided
by its channel mean, gamma and beta parameters of shape (1, 1, 1, C)), V1's
layer scale parameter, residual without stochastic depth, head on
x.mean([-2, -1]).

A diffusion U-Net (DDPM style): sinusoidal timestep embedding of a float input
t, a cosine schedule computed from t, noise from torch.randn_like inside
forward and q_sample, ResBlocks with GroupNorm, SiLU, dropout and FiLM
scale-shift (emb[:, :, None, None].chunk(2, dim=1), h * (1 + scale) + shift),
a 1x1 skip conv where channels change, a mid-block self-attention by
F.scaled_dot_product_attention on the flattened map (qkv reshaped and
unbind-ed), F.interpolate(scale_factor=2.0, mode="nearest") and skip
concatenations, F.mse_loss against the noise.

An unsupervised optical-flow net: one shared flow CNN applied to cat(I1, I2)
and cat(I2, I1), flow predicted at half resolution and upsampled by bilinear
F.interpolate times 2, backward warping by F.grid_sample (bilinear, border
padding, align_corners=True) on a pixel grid from torch.meshgrid of aranges
plus the flow normalised to [-1, 1], a validity mask by grid_sample of ones
thresholded, forward-backward consistency occlusion (detached), a
Charbonnier photometric loss sqrt(d^2 + eps^2) and a smoothness loss by
torch.diff along both axes.

A Mixtral-style sparse mixture of experts as HF writes it: router softmax with
dtype=torch.float, torch.topk(2), an in-place /= of the top-k weights by their
sum, F.one_hot(selected, E).permute(2, 1, 0) as the expert mask, per expert
torch.where(mask) (data-dependent sizes), hidden[None, top_x] gathered,
SwiGLU experts, weights picked by routing_weights[top_x, idx, None],
index_add_ into a torch.zeros buffer; HF's load-balancing loss and a router
z-loss (logsumexp squared); attention by SDPA(is_causal=True),
nn.LayerNorm(bias=False).

A Kolmogorov-Arnold network (efficient-kan): a B-spline basis of order 3 from
a grid buffer, (x >= grid[:, :-1]) & (x < grid[:, 1:]) cast to float, the
Cox-de Boor recursion unrolled with slices of the grid, a SiLU base branch
F.linear, a spline branch F.linear of the flattened bases with
spline_weight * spline_scaler.unsqueeze(-1), its L1 + entropy regulariser;
input by F.adaptive_avg_pool2d of an image and tanh.

A VQ-VAE with an EMA codebook: codebook, cluster sizes and running sums are
buffers updated in forward under torch.no_grad() by mul_().add_(alpha=),
lerp_ and copy_ (Laplace-smoothed cluster sizes), distances by
x^2 - 2 x E^T + E^2, argmin, F.one_hot, F.embedding of the indices, the
straight-through z + (q - z).detach(), a commitment loss against q.detach(),
a perplexity output, and a decoder by bilinear F.interpolate + conv with an
F.mse_loss reconstruction.

Exported like the zoo (tools/models/common.export), with the zoo's options,
so that `tools/bench/zoo.py --models-script tools/models/unseen8.py` runs
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


# ----------------------------------------------------------------------------- Llama (Meta reference style)

def precompute_freqs(dim, end, theta=10000.0):
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end).float()
    return torch.outer(t, freqs)


def reshape_for_broadcast(freqs_cis, x):
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


def apply_rotary_emb(xq, xk, freqs_cis):
    xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    freqs_cis = reshape_for_broadcast(freqs_cis, xq_)
    xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
    xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
    return xq_out.type_as(xq), xk_out.type_as(xk)


class LlamaAttention(nn.Module):
    def __init__(self, d, n_heads, n_kv_heads):
        super().__init__()
        self.n_heads, self.n_kv_heads, self.head_dim = n_heads, n_kv_heads, d // n_heads
        self.wq = nn.Linear(d, n_heads * self.head_dim, bias=False)
        self.wk = nn.Linear(d, n_kv_heads * self.head_dim, bias=False)
        self.wv = nn.Linear(d, n_kv_heads * self.head_dim, bias=False)
        self.wo = nn.Linear(n_heads * self.head_dim, d, bias=False)

    def forward(self, x, freqs_cis):
        bsz, seqlen, _ = x.shape
        xq = self.wq(x).view(bsz, seqlen, self.n_heads, self.head_dim)
        xk = self.wk(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xv = self.wv(x).view(bsz, seqlen, self.n_kv_heads, self.head_dim)
        xq, xk = apply_rotary_emb(xq, xk, freqs_cis=freqs_cis)
        out = F.scaled_dot_product_attention(xq.transpose(1, 2), xk.transpose(1, 2), xv.transpose(1, 2),
                                             is_causal=True, enable_gqa=True)
        out = out.transpose(1, 2).contiguous().view(bsz, seqlen, -1)
        return self.wo(out)


class LlamaFeedForward(nn.Module):
    def __init__(self, d, hidden, multiple_of=32):
        super().__init__()
        hidden = int(2 * hidden / 3)
        hidden = multiple_of * ((hidden + multiple_of - 1) // multiple_of)
        self.w1 = nn.Linear(d, hidden, bias=False)
        self.w2 = nn.Linear(hidden, d, bias=False)
        self.w3 = nn.Linear(d, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class LlamaBlock(nn.Module):
    def __init__(self, d, n_heads, n_kv_heads):
        super().__init__()
        self.attention = LlamaAttention(d, n_heads, n_kv_heads)
        self.feed_forward = LlamaFeedForward(d, 4 * d)
        self.attention_norm = nn.RMSNorm(d, eps=1e-5)
        self.ffn_norm = nn.RMSNorm(d, eps=1e-5)

    def forward(self, x, freqs_cis):
        h = x + self.attention(self.attention_norm(x), freqs_cis)
        return h + self.feed_forward(self.ffn_norm(h))


class Llama(nn.Module):
    def __init__(self, vocab=256, d=64, n_layers=2, n_heads=4, n_kv_heads=2, max_seq=128):
        super().__init__()
        self.tok_embeddings = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(LlamaBlock(d, n_heads, n_kv_heads) for _ in range(n_layers))
        self.norm = nn.RMSNorm(d, eps=1e-5)
        self.output = nn.Linear(d, vocab, bias=False)
        self.output.weight = self.tok_embeddings.weight
        self.register_buffer("freqs", precompute_freqs(d // n_heads, max_seq), persistent=False)

    def forward(self, tokens):
        _, seqlen = tokens.shape
        h = self.tok_embeddings(tokens)
        freqs = self.freqs[:seqlen]
        freqs_cis = torch.polar(torch.ones_like(freqs), freqs)
        for layer in self.layers:
            h = layer(h, freqs_cis)
        return self.output(self.norm(h)).float()


# ----------------------------------------------------------------------------- BiGRU-CRF tagger

class BiGRUCRF(nn.Module):
    def __init__(self, B, L, vocab=300, emb=32, hid=32, tags=9):
        super().__init__()
        self.emb = nn.Embedding(vocab, emb, padding_idx=0)
        self.gru = nn.GRU(emb, hid, num_layers=2, batch_first=True, bidirectional=True, dropout=0.1)
        self.h0 = nn.Parameter(torch.zeros(4, 1, hid))
        self.drop = nn.Dropout(0.1)
        self.proj = nn.Linear(2 * hid + emb, tags)
        self.transitions = nn.Parameter(torch.randn(tags, tags) * 0.1)
        self.start_transitions = nn.Parameter(torch.randn(tags) * 0.1)
        self.end_transitions = nn.Parameter(torch.randn(tags) * 0.1)
        g = torch.Generator().manual_seed(7)
        self.register_buffer("gold", torch.randint(0, tags, (B, L), generator=g))

    def forward(self, tokens):
        B, L = tokens.shape
        e = self.emb(tokens)
        h0 = self.h0.expand(-1, B, -1).contiguous()
        out, h_n = self.gru(e, h0)
        emissions = self.proj(self.drop(torch.cat([out, e], dim=-1)))       # (B, L, T)
        mask = (tokens != 0).to(emissions.dtype)
        # log partition, forward algorithm
        alpha = self.start_transitions + emissions[:, 0]
        for t in range(1, L):
            nxt = torch.logsumexp(alpha.unsqueeze(2) + self.transitions.unsqueeze(0) + emissions[:, t].unsqueeze(1), dim=1)
            m = mask[:, t].unsqueeze(1)
            alpha = nxt * m + alpha * (1.0 - m)
        log_z = torch.logsumexp(alpha + self.end_transitions, dim=1)
        # gold path score
        tags = self.gold
        em = (emissions.gather(2, tags.unsqueeze(-1)).squeeze(-1) * mask).sum(1)
        tr = (self.transitions[tags[:, :-1], tags[:, 1:]] * mask[:, 1:]).sum(1)
        last = mask.sum(1).long() - 1
        last_tags = tags.gather(1, last.unsqueeze(1)).squeeze(1)
        score = self.start_transitions[tags[:, 0]] + em + tr + self.end_transitions[last_tags]
        nll = (log_z - score).mean()
        return nll, h_n.sum(0)


# ----------------------------------------------------------------------------- DeepSets / Set Transformer readout

class SetReadout(nn.Module):
    def __init__(self, d_in=3, d=64, cats=50, classes=10):
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(d_in, d), nn.ReLU(), nn.Linear(d, d))
        self.lam = nn.Linear(d, d)
        self.gam = nn.Linear(d, d, bias=False)
        self.gate = nn.Linear(d, 1)
        self.table = nn.Parameter(torch.randn(cats, d) * 0.1)
        self.seed = nn.Parameter(torch.randn(1, 1, d) * 0.1)
        self.q = nn.Linear(d, d); self.k = nn.Linear(d, d); self.v = nn.Linear(d, d)
        self.rho = nn.Sequential(nn.Linear(4 * d, d), nn.ReLU(), nn.Linear(d, classes))

    def forward(self, x, ids):
        B, N, _ = x.shape
        h = self.phi(x)                                    # (B, N, d)
        pooled = h.sum(1)                                  # DeepSets sum; h is read again below
        h2 = F.elu(self.lam(h) - self.gam(pooled / N).unsqueeze(1))
        w = torch.sigmoid(self.gate(h2)).squeeze(-1)       # (B, N)
        bag = F.embedding_bag(ids, self.table, mode="sum", per_sample_weights=w)
        seed = self.seed.expand(B, -1, -1)
        q, k, v = self.q(seed), self.k(h2), self.v(h2)
        a = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(q.size(-1)), dim=-1)
        pma = (a @ v + seed).squeeze(1)
        mx = h2.amax(1)
        return self.rho(torch.cat([pooled, pma, mx, bag], dim=-1))


# ----------------------------------------------------------------------------- SimCLR + BYOL

class SmallEncoder(nn.Module):
    def __init__(self, d=64):
        super().__init__()
        def cbr(i, o):
            return [nn.Conv2d(i, o, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(o), nn.ReLU(inplace=True)]
        self.net = nn.Sequential(*cbr(3, 16), *cbr(16, 32), *cbr(32, d), nn.AdaptiveAvgPool2d(1), nn.Flatten())

    def forward(self, x):
        return self.net(x)


class SimCLRBYOL(nn.Module):
    def __init__(self, d=64, p=32, tau=0.2):
        super().__init__()
        self.encoder = SmallEncoder(d)
        self.projector = nn.Sequential(nn.Linear(d, d), nn.BatchNorm1d(d), nn.ReLU(), nn.Linear(d, p))
        self.predictor = nn.Sequential(nn.Linear(p, p), nn.ReLU(), nn.Linear(p, p))
        self.tau = tau
        self.register_buffer("jitter", torch.tensor([0.9, 1.1, 1.0]).view(1, 3, 1, 1))

    def forward(self, x):
        B = x.size(0)
        v1 = x
        v2 = torch.flip(x, dims=[3]) * self.jitter
        z1 = self.projector(self.encoder(v1))
        z2 = self.projector(self.encoder(v2))
        z = F.normalize(torch.cat([z1, z2], dim=0), dim=1)
        logits = z @ z.T / self.tau
        eye = torch.eye(2 * B, dtype=torch.bool, device=x.device)
        logits = logits.masked_fill(eye, float("-inf"))
        labels = (torch.arange(2 * B, device=x.device) + B) % (2 * B)
        nt_xent = F.cross_entropy(logits, labels)
        p1, p2 = self.predictor(z1), self.predictor(z2)
        byol = (2 - 2 * F.cosine_similarity(p1, z2.detach(), dim=-1)).mean() + \
               (2 - 2 * F.cosine_similarity(p2, z1.detach(), dim=-1)).mean()
        return {"nt_xent": nt_xent, "byol": byol, "z": z}


# ----------------------------------------------------------------------------- ArcFace / prototypes

class ArcFace(nn.Module):
    def __init__(self, B, d=64, classes=20, sub=3, protos=16, s=30.0, m=0.5):
        super().__init__()
        self.embed = nn.Sequential(
            nn.Conv2d(3, 16, 3, stride=2, padding=1), nn.CELU(0.5),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.Hardtanh(-2.0, 2.0),
            nn.Conv2d(32, 64, 3, stride=2, padding=1), nn.CELU(),
            nn.AdaptiveAvgPool2d(2), nn.Flatten(), nn.Linear(256, d))
        self.bn = nn.BatchNorm1d(d, affine=False)
        self.weight = nn.Parameter(torch.randn(classes, d) * 0.1)
        self.sub_weight = nn.Parameter(torch.randn(classes * sub, d) * 0.1)
        self.prototypes = nn.Parameter(torch.randn(protos, d))
        self.s, self.m, self.sub, self.classes = s, m, sub, classes
        self.cos_m, self.sin_m = math.cos(m), math.sin(m)
        self.th, self.mm = math.cos(math.pi - m), math.sin(math.pi - m) * m
        g = torch.Generator().manual_seed(11)
        self.register_buffer("labels", torch.randint(0, classes, (B,), generator=g))

    def forward(self, x):
        emb = self.bn(self.embed(x))
        cosine = F.linear(F.normalize(emb), F.normalize(self.weight))
        theta = torch.acos(cosine.clamp(-1.0 + 1e-7, 1.0 - 1e-7))
        target = torch.cos(theta + self.m)
        target = torch.where(cosine > self.th, target, cosine - self.mm)
        one_hot = torch.zeros_like(cosine)
        one_hot.scatter_(1, self.labels.view(-1, 1), 1.0)
        logits = self.s * (one_hot * target + (1.0 - one_hot) * cosine)
        loss = F.cross_entropy(logits, self.labels)
        sub_cos = F.linear(F.normalize(emb), F.normalize(self.sub_weight)).view(-1, self.classes, self.sub).amax(-1)
        proto = F.cosine_similarity(emb.unsqueeze(1), self.prototypes.unsqueeze(0), dim=-1)
        return loss, sub_cos, proto


# ----------------------------------------------------------------------------- nn.TransformerEncoder/Decoder, norm_first

class TorchEncDec(nn.Module):
    def __init__(self, vocab=200, d=64, heads=4, ff=128, layers=2, max_len=64):
        super().__init__()
        self.d = d
        self.src_emb = nn.Embedding(vocab, d, padding_idx=0)
        self.tgt_emb = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(max_len, d) * 0.02)
        enc_layer = nn.TransformerEncoderLayer(d, heads, ff, dropout=0.1, activation="gelu",
                                               batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(enc_layer, layers, norm=nn.LayerNorm(d), enable_nested_tensor=False)
        dec_layer = nn.TransformerDecoderLayer(d, heads, ff, dropout=0.1, activation="gelu",
                                               batch_first=True, norm_first=True, bias=False)
        self.decoder = nn.TransformerDecoder(dec_layer, layers, norm=nn.LayerNorm(d, bias=False))
        self.head = nn.Linear(d, vocab)

    def forward(self, src, tgt):
        S, T = src.size(1), tgt.size(1)
        src_pad = src == 0
        mem = self.encoder(self.src_emb(src) * math.sqrt(self.d) + self.pos[:S], src_key_padding_mask=src_pad)
        tgt_mask = nn.Transformer.generate_square_subsequent_mask(T, device=tgt.device, dtype=mem.dtype)
        out = self.decoder(self.tgt_emb(tgt) * math.sqrt(self.d) + self.pos[:T], mem, tgt_mask=tgt_mask,
                           tgt_is_causal=True, memory_key_padding_mask=src_pad)
        return self.head(out)


# ----------------------------------------------------------------------------- Perceiver

def fourier_features(H, W, bands, device, dtype):
    ys = torch.linspace(-1.0, 1.0, H, device=device, dtype=dtype)
    xs = torch.linspace(-1.0, 1.0, W, device=device, dtype=dtype)
    yy, xx = torch.meshgrid(ys, xs, indexing="ij")
    pos = torch.stack([yy, xx], dim=-1)                                       # (H, W, 2)
    freqs = torch.linspace(1.0, H / 2.0, bands, device=device, dtype=dtype)
    scaled = pos[..., None] * freqs * math.pi                                 # (H, W, 2, bands)
    scaled = scaled.reshape(H, W, -1)
    return torch.cat([pos, torch.sin(scaled), torch.cos(scaled)], dim=-1).reshape(H * W, -1)


class LatentBlock(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.ln2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))

    def forward(self, z):
        h = self.ln1(z)
        z = z + self.attn(h, h, h, need_weights=False)[0]
        return z + self.mlp(self.ln2(z))


class Perceiver(nn.Module):
    def __init__(self, latents=32, d=64, bands=6, classes=10):
        super().__init__()
        self.bands = bands
        kv = 3 + 2 + 2 * 2 * bands
        self.latents = nn.Parameter(torch.randn(latents, d) * 0.02)
        self.ln_kv = nn.LayerNorm(kv)
        self.ln_q = nn.LayerNorm(d)
        self.cross = nn.MultiheadAttention(d, 1, kdim=kv, vdim=kv, batch_first=True)
        self.cross_mlp = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, d), nn.GELU(), nn.Linear(d, d))
        self.blocks1 = nn.Sequential(LatentBlock(d, 4), LatentBlock(d, 4))
        self.blocks2 = nn.Sequential(LatentBlock(d, 4))
        self.head = nn.Sequential(nn.LayerNorm(d), nn.Linear(d, classes))

    def cross_attend(self, z, data):
        z = z + self.cross(self.ln_q(z), data, data, need_weights=False)[0]
        return z + self.cross_mlp(z)

    def forward(self, img):
        B, C, H, W = img.shape
        pix = img.permute(0, 2, 3, 1).reshape(B, H * W, C)
        pos = fourier_features(H, W, self.bands, img.device, img.dtype)
        data = self.ln_kv(torch.cat([pix, pos.unsqueeze(0).expand(B, -1, -1)], dim=-1))
        z = self.latents.expand(B, -1, -1)
        z = self.blocks1(self.cross_attend(z, data))
        z = self.blocks2(self.cross_attend(z, data))          # the cross-attention's weights shared
        return self.head(z.mean(1))


# ----------------------------------------------------------------------------- ConvNeXt V1 / V2

class LayerNorm2d(nn.LayerNorm):
    """timm's LayerNorm2d: LayerNorm over channels of an NCHW map."""

    def forward(self, x):
        x = x.permute(0, 2, 3, 1)
        x = F.layer_norm(x, self.normalized_shape, self.weight, self.bias, self.eps)
        return x.permute(0, 3, 1, 2)


class GRN(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(1, 1, 1, dim))
        self.beta = nn.Parameter(torch.zeros(1, 1, 1, dim))

    def forward(self, x):
        Gx = torch.norm(x, p=2, dim=(1, 2), keepdim=True)
        Nx = Gx / (Gx.mean(dim=-1, keepdim=True) + 1e-6)
        return self.gamma * (x * Nx) + self.beta + x


class ConvNeXtBlock(nn.Module):
    def __init__(self, dim, v2, ls_init=1e-6):
        super().__init__()
        self.dwconv = nn.Conv2d(dim, dim, kernel_size=7, padding=3, groups=dim)
        self.norm = nn.LayerNorm(dim, eps=1e-6)
        self.pwconv1 = nn.Linear(dim, 4 * dim)
        self.act = nn.GELU(approximate="tanh")
        self.grn = GRN(4 * dim) if v2 else nn.Identity()
        self.pwconv2 = nn.Linear(4 * dim, dim)
        self.gamma = None if v2 else nn.Parameter(ls_init * torch.ones(dim))

    def forward(self, x):
        inp = x
        x = self.dwconv(x)
        x = x.permute(0, 2, 3, 1)
        x = self.norm(x)
        x = self.pwconv1(x)
        x = self.act(x)
        x = self.grn(x)
        x = self.pwconv2(x)
        if self.gamma is not None:
            x = self.gamma * x
        x = x.permute(0, 3, 1, 2)
        return inp + x


class ConvNeXt(nn.Module):
    def __init__(self, dims=(32, 64, 96), depths=(1, 1, 2), classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, dims[0], kernel_size=4, stride=4), LayerNorm2d(dims[0], eps=1e-6))
        self.downsample = nn.ModuleList(
            nn.Sequential(LayerNorm2d(dims[i], eps=1e-6), nn.Conv2d(dims[i], dims[i + 1], kernel_size=2, stride=2))
            for i in range(len(dims) - 1))
        self.stages = nn.ModuleList(nn.Sequential(*[ConvNeXtBlock(dims[i], v2=(i > 0)) for _ in range(depths[i])])
                                    for i in range(len(dims)))
        self.norm = nn.LayerNorm(dims[-1], eps=1e-6)
        self.head = nn.Linear(dims[-1], classes)

    def forward(self, x):
        x = self.stages[0](self.stem(x))
        for down, stage in zip(self.downsample, self.stages[1:]):
            x = stage(down(x))
        return self.head(self.norm(x.mean([-2, -1])))


# ----------------------------------------------------------------------------- diffusion U-Net

def timestep_embedding(t, dim, max_period=10000.0):
    half = dim // 2
    freqs = torch.exp(-math.log(max_period) * torch.arange(half, dtype=torch.float32, device=t.device) / half)
    args = t[:, None].float() * 1000.0 * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1).to(t.dtype)


class ResBlock(nn.Module):
    def __init__(self, cin, cout, temb):
        super().__init__()
        self.in_layers = nn.Sequential(nn.GroupNorm(8, cin), nn.SiLU(), nn.Conv2d(cin, cout, 3, padding=1))
        self.emb_layers = nn.Sequential(nn.SiLU(), nn.Linear(temb, 2 * cout))
        self.out_norm = nn.GroupNorm(8, cout)
        self.out_rest = nn.Sequential(nn.SiLU(), nn.Dropout(0.1), nn.Conv2d(cout, cout, 3, padding=1))
        self.skip = nn.Identity() if cin == cout else nn.Conv2d(cin, cout, 1)

    def forward(self, x, emb):
        h = self.in_layers(x)
        emb_out = self.emb_layers(emb)[:, :, None, None]
        scale, shift = emb_out.chunk(2, dim=1)
        h = self.out_norm(h) * (1 + scale) + shift
        return self.skip(x) + self.out_rest(h)


class AttnBlock(nn.Module):
    def __init__(self, c, heads=2):
        super().__init__()
        self.heads = heads
        self.norm = nn.GroupNorm(8, c)
        self.qkv = nn.Conv2d(c, 3 * c, 1)
        self.proj_out = nn.Conv2d(c, c, 1)

    def forward(self, x):
        B, C, H, W = x.shape
        qkv = self.qkv(self.norm(x)).reshape(B, 3, self.heads, C // self.heads, H * W)
        q, k, v = qkv.permute(1, 0, 2, 4, 3).unbind(0)
        h = F.scaled_dot_product_attention(q, k, v)
        h = h.permute(0, 1, 3, 2).reshape(B, C, H, W)
        return x + self.proj_out(h)


class DiffusionUNet(nn.Module):
    def __init__(self, ch=16, temb=64):
        super().__init__()
        self.ch = ch
        self.time_embed = nn.Sequential(nn.Linear(ch, temb), nn.SiLU(), nn.Linear(temb, temb))
        self.inp = nn.Conv2d(3, ch, 3, padding=1)
        self.down1 = ResBlock(ch, ch, temb)
        self.pool1 = nn.Conv2d(ch, ch, 3, stride=2, padding=1)
        self.down2 = ResBlock(ch, 2 * ch, temb)
        self.pool2 = nn.Conv2d(2 * ch, 2 * ch, 3, stride=2, padding=1)
        self.mid1 = ResBlock(2 * ch, 4 * ch, temb)
        self.mid_attn = AttnBlock(4 * ch)
        self.mid2 = ResBlock(4 * ch, 4 * ch, temb)
        self.up2_conv = nn.Conv2d(4 * ch, 2 * ch, 3, padding=1)
        self.up2 = ResBlock(4 * ch, 2 * ch, temb)
        self.up1_conv = nn.Conv2d(2 * ch, ch, 3, padding=1)
        self.up1 = ResBlock(2 * ch, ch, temb)
        self.out = nn.Sequential(nn.GroupNorm(8, ch), nn.SiLU(), nn.Conv2d(ch, 3, 3, padding=1))

    def forward(self, x0, t):
        alpha_bar = torch.cos((t + 0.008) / 1.008 * math.pi / 2) ** 2
        noise = torch.randn_like(x0)
        x = alpha_bar.sqrt()[:, None, None, None] * x0 + (1 - alpha_bar).sqrt()[:, None, None, None] * noise
        emb = self.time_embed(timestep_embedding(t, self.ch))
        h1 = self.down1(self.inp(x), emb)
        h2 = self.down2(self.pool1(h1), emb)
        h = self.mid2(self.mid_attn(self.mid1(self.pool2(h2), emb)), emb)
        h = self.up2_conv(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        h = self.up2(torch.cat([h, h2], dim=1), emb)
        h = self.up1_conv(F.interpolate(h, scale_factor=2.0, mode="nearest"))
        h = self.up1(torch.cat([h, h1], dim=1), emb)
        eps = self.out(h)
        return F.mse_loss(eps, noise), eps


# ----------------------------------------------------------------------------- unsupervised optical flow

def warp(x, flow):
    B, C, H, W = x.shape
    yy, xx = torch.meshgrid(torch.arange(H, device=x.device, dtype=x.dtype),
                            torch.arange(W, device=x.device, dtype=x.dtype), indexing="ij")
    grid = torch.stack((xx, yy), dim=0).unsqueeze(0) + flow
    gx = 2.0 * grid[:, 0] / max(W - 1, 1) - 1.0
    gy = 2.0 * grid[:, 1] / max(H - 1, 1) - 1.0
    g = torch.stack((gx, gy), dim=3)
    out = F.grid_sample(x, g, mode="bilinear", padding_mode="border", align_corners=True)
    ones = torch.ones_like(x[:, :1])
    valid = F.grid_sample(ones, g, mode="bilinear", padding_mode="zeros", align_corners=True)
    return out, (valid > 0.999).to(x.dtype)


class FlowNet(nn.Module):
    def __init__(self, c=24):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(6, c, 3, stride=2, padding=1), nn.LeakyReLU(0.1),
                                 nn.Conv2d(c, c, 3, padding=1), nn.LeakyReLU(0.1),
                                 nn.Conv2d(c, c, 3, padding=2, dilation=2), nn.LeakyReLU(0.1),
                                 nn.Conv2d(c, 2, 3, padding=1))

    def forward(self, a, b):
        f = self.enc(torch.cat([a, b], dim=1))
        return 2.0 * F.interpolate(f, scale_factor=2.0, mode="bilinear", align_corners=False)


class UnsupFlow(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = FlowNet()

    @staticmethod
    def charbonnier(d, mask, eps=1e-3):
        return (torch.sqrt(d * d + eps * eps) * mask).sum() / mask.sum().clamp(min=1.0)

    def forward(self, i1, i2):
        fw = self.net(i1, i2)
        bw = self.net(i2, i1)
        i2w, v1 = warp(i2, fw)
        i1w, v2 = warp(i1, bw)
        bw_w, _ = warp(bw, fw)
        with torch.no_grad():
            mag = (fw * fw).sum(1, keepdim=True) + (bw_w * bw_w).sum(1, keepdim=True)
            diff = ((fw + bw_w) ** 2).sum(1, keepdim=True)
            occ = (diff < 0.01 * mag + 0.5).to(i1.dtype)
        photo = self.charbonnier(i2w - i1, v1 * occ) + self.charbonnier(i1w - i2, v2)
        smooth = torch.diff(fw, dim=-1).abs().mean() + torch.diff(fw, dim=-2).abs().mean() + \
            torch.diff(bw, dim=-1).abs().mean() + torch.diff(bw, dim=-2).abs().mean()
        return {"loss": photo + 0.1 * smooth, "flow": fw}


# ----------------------------------------------------------------------------- Mixtral-style sparse MoE

class MoeExpert(nn.Module):
    def __init__(self, d, ff):
        super().__init__()
        self.w1 = nn.Linear(d, ff, bias=False)
        self.w2 = nn.Linear(ff, d, bias=False)
        self.w3 = nn.Linear(d, ff, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class SparseMoeBlock(nn.Module):
    def __init__(self, d, ff, experts=4, top_k=2):
        super().__init__()
        self.hidden_dim, self.num_experts, self.top_k = d, experts, top_k
        self.gate = nn.Linear(d, experts, bias=False)
        self.experts = nn.ModuleList(MoeExpert(d, ff) for _ in range(experts))

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)
        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype, device=hidden_states.device)
        expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


def load_balancing_loss(gate_logits, num_experts, top_k):
    concatenated = torch.cat(list(gate_logits), dim=0)
    routing_weights = F.softmax(concatenated, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    return torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0)) * num_experts


class MoeLayer(nn.Module):
    def __init__(self, d, heads, ff, experts):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(d, bias=False)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.o = nn.Linear(d, d, bias=False)
        self.ln2 = nn.LayerNorm(d, bias=False)
        self.moe = SparseMoeBlock(d, ff, experts)

    def forward(self, x):
        B, L, D = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(B, L, 3, self.heads, D // self.heads).permute(2, 0, 3, 1, 4)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o(a.transpose(1, 2).reshape(B, L, D))
        m, logits = self.moe(self.ln2(x))
        return x + m, logits


class MixtralMoE(nn.Module):
    def __init__(self, vocab=256, d=64, heads=4, ff=96, experts=4, layers=2):
        super().__init__()
        self.experts = experts
        self.emb = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList(MoeLayer(d, heads, ff, experts) for _ in range(layers))
        self.norm = nn.LayerNorm(d, bias=False)
        self.lm_head = nn.Linear(d, vocab, bias=False)

    def forward(self, ids):
        x = self.emb(ids)
        all_logits = []
        for layer in self.layers:
            x, lg = layer(x)
            all_logits.append(lg)
        aux = load_balancing_loss(all_logits, self.experts, 2)
        z_loss = sum(torch.logsumexp(lg, dim=-1).square().mean() for lg in all_logits)
        return self.lm_head(self.norm(x)), 0.01 * aux + 0.001 * z_loss


# ----------------------------------------------------------------------------- KAN (efficient-kan)

class KANLinear(nn.Module):
    def __init__(self, in_features, out_features, grid_size=5, spline_order=3, grid_range=(-1.0, 1.0)):
        super().__init__()
        self.in_features, self.out_features = in_features, out_features
        self.grid_size, self.spline_order = grid_size, spline_order
        h = (grid_range[1] - grid_range[0]) / grid_size
        grid = (torch.arange(-spline_order, grid_size + spline_order + 1) * h + grid_range[0])
        self.register_buffer("grid", grid.expand(in_features, -1).contiguous())
        self.base_weight = nn.Parameter(torch.randn(out_features, in_features) / math.sqrt(in_features))
        self.spline_weight = nn.Parameter(torch.randn(out_features, in_features, grid_size + spline_order) * 0.1)
        self.spline_scaler = nn.Parameter(torch.randn(out_features, in_features) / math.sqrt(in_features))
        self.base_activation = nn.SiLU()

    def b_splines(self, x):
        grid = self.grid
        x = x.unsqueeze(-1)
        bases = ((x >= grid[:, :-1]) & (x < grid[:, 1:])).to(x.dtype)
        for k in range(1, self.spline_order + 1):
            bases = ((x - grid[:, : -(k + 1)]) / (grid[:, k:-1] - grid[:, : -(k + 1)]) * bases[:, :, :-1]) + (
                (grid[:, k + 1:] - x) / (grid[:, k + 1:] - grid[:, 1:(-k)]) * bases[:, :, 1:])
        return bases.contiguous()

    @property
    def scaled_spline_weight(self):
        return self.spline_weight * self.spline_scaler.unsqueeze(-1)

    def forward(self, x):
        original_shape = x.shape
        x = x.reshape(-1, self.in_features)
        base_output = F.linear(self.base_activation(x), self.base_weight)
        spline_output = F.linear(self.b_splines(x).view(x.size(0), -1),
                                 self.scaled_spline_weight.view(self.out_features, -1))
        return (base_output + spline_output).reshape(*original_shape[:-1], self.out_features)

    def regularization_loss(self, act=1.0, ent=1.0):
        l1_fake = self.spline_weight.abs().mean(-1)
        reg_act = l1_fake.sum()
        p = l1_fake / reg_act
        reg_ent = -torch.sum(p * p.log())
        return act * reg_act + ent * reg_ent


class KAN(nn.Module):
    def __init__(self, side=16, hidden=32, classes=10):
        super().__init__()
        self.side = side
        self.norm = nn.LayerNorm(3 * side * side)
        self.l1 = KANLinear(3 * side * side, hidden)
        self.l2 = KANLinear(hidden, classes)

    def forward(self, img):
        x = F.adaptive_avg_pool2d(img, self.side).flatten(1)
        x = torch.tanh(self.norm(x))
        y = self.l2(torch.tanh(self.l1(x)))
        reg = self.l1.regularization_loss() + self.l2.regularization_loss()
        return y, 1e-3 * reg


# ----------------------------------------------------------------------------- VQ-VAE, EMA codebook

class VectorQuantizerEMA(nn.Module):
    def __init__(self, K=64, D=32, decay=0.99, eps=1e-5):
        super().__init__()
        self.K, self.D, self.decay, self.eps = K, D, decay, eps
        embed = torch.randn(K, D)
        self.register_buffer("embed", embed)
        self.register_buffer("cluster_size", torch.ones(K))
        self.register_buffer("embed_avg", embed.clone())

    def forward(self, z):
        B, D, H, W = z.shape
        flat = z.permute(0, 2, 3, 1).reshape(-1, D)
        dist = flat.pow(2).sum(1, keepdim=True) - 2 * flat @ self.embed.t() + self.embed.pow(2).sum(1)[None, :]
        idx = dist.argmin(1)
        onehot = F.one_hot(idx, self.K).type(flat.dtype)
        q = F.embedding(idx, self.embed).view(B, H, W, D).permute(0, 3, 1, 2)
        if self.training:
            with torch.no_grad():
                self.cluster_size.mul_(self.decay).add_(onehot.sum(0), alpha=1 - self.decay)
                embed_sum = onehot.t() @ flat.detach()
                self.embed_avg.lerp_(embed_sum, 1 - self.decay)
                n = self.cluster_size.sum()
                cs = (self.cluster_size + self.eps) / (n + self.K * self.eps) * n
                self.embed.copy_(self.embed_avg / cs.unsqueeze(1))
        commit = F.mse_loss(z, q.detach())
        q = z + (q - z).detach()
        avg_probs = onehot.mean(0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return q, commit, perplexity


class VQVAE(nn.Module):
    def __init__(self, c=32, D=32):
        super().__init__()
        self.enc = nn.Sequential(nn.Conv2d(3, c, 4, stride=2, padding=1), nn.ReLU(),
                                 nn.Conv2d(c, c, 4, stride=2, padding=1), nn.ReLU(), nn.Conv2d(c, D, 1))
        self.vq = VectorQuantizerEMA(64, D)
        self.dec1 = nn.Conv2d(D, c, 3, padding=1)
        self.dec2 = nn.Conv2d(c, 3, 3, padding=1)

    def forward(self, x):
        q, commit, perplexity = self.vq(self.enc(x))
        h = F.relu(self.dec1(F.interpolate(q, scale_factor=2.0, mode="bilinear", align_corners=False)))
        recon = self.dec2(F.interpolate(h, scale_factor=2.0, mode="bilinear", align_corners=False))
        return F.mse_loss(recon, x) + 0.25 * commit, perplexity


NAMES = ["llama", "bigru_crf", "deepsets", "simclr", "arcface", "torch_encdec", "perceiver", "convnext",
         "ddpm_unet", "unsup_flow", "mixtral_moe", "kan", "vqvae_ema"]


def padded_ids(B, L, vocab, g):
    """Token ids in 1..vocab-1 with a padding tail of zeros (the first row is full)."""
    ids = common.token_ids((B, L), vocab - 1, g) + 1
    lengths = torch.randint(L // 2, L + 1, (B,), generator=g)
    lengths[0] = L
    return ids * (torch.arange(L)[None, :] < lengths[:, None]).long()


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    half = max(16, (S // 2) // 16 * 16)     # 48 at the default --image 96
    third = max(16, (S // 3) // 16 * 16)    # 32 at the default --image 96
    if name == "llama":
        return Llama(), [common.token_ids((B, 64), 256, g)]
    if name == "bigru_crf":
        return BiGRUCRF(B, 24), [padded_ids(B, 24, 300, g)]
    if name == "deepsets":
        return SetReadout(), [common.float_input((B, 128, 3), dtype, g), common.token_ids((B, 128), 50, g)]
    if name == "simclr":
        return SimCLRBYOL(), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "arcface":
        return ArcFace(B), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "torch_encdec":
        return TorchEncDec(), [padded_ids(B, 40, 200, g), common.token_ids((B, 24), 199, g) + 1]
    if name == "perceiver":
        return Perceiver(), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "convnext":
        return ConvNeXt(), [common.float_input((B, 3, S, S), dtype, g)]
    if name == "ddpm_unet":
        t = torch.rand((B,), generator=g, dtype=torch.float64).to(dtype)
        return DiffusionUNet(), [common.float_input((B, 3, third, third), dtype, g), t]
    if name == "unsup_flow":
        return UnsupFlow(), [common.float_input((B, 3, half, half), dtype, g) for _ in range(2)]
    if name == "mixtral_moe":
        return MixtralMoE(), [common.token_ids((B, 32), 256, g)]
    if name == "kan":
        return KAN(), [common.float_input((B, 3, S, S), dtype, g)]
    if name == "vqvae_ema":
        return VQVAE(), [common.float_input((B, 3, half, half), dtype, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen8.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
