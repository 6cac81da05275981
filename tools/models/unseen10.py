#!/usr/bin/env python3
"""unseen10.py — a tenth set of models nobody tuned rkmate for
(after tools/models/unseen.py ... unseen9.py), all small and written as users
of torch 2.x write them today.  Each has idioms the other sets do not:

A Conformer with relative positional self-attention as ESPnet / WeNet write
it: a lengths input turned into a padding mask by make_pad_mask (torch.arange
expanded against lengths.unsqueeze(-1)), Conv2dSubsampling (two stride-2
Conv2d on the (B, 1, T, F) features, transpose + view to (B, T', C * F'))
with the mask cut by strided slices mask[:, :, :-2:2][:, :, :-2:2], a
RelPositionalEncoding buffer of 2 max_len - 1 positions (flipped positive
half cat-ed with the negative half) sliced around its centre, x * sqrt(d)
scaling, a bias-free linear_pos, pos_bias_u / pos_bias_v parameters added to
the queries, and Transformer-XL's rel_shift (a zero column cat-ed in front,
view(B, H, 2T, T), drop the first row, view_as back, keep the first T
columns), scores masked_fill-ed with finfo.min and the probabilities
masked_fill-ed with 0, a convolution module whose input is masked_fill-ed at
the padded frames, and a masked mean-pooled classifier.

An FT-Transformer for tabular data (rtdl): periodic numerical embeddings
(2 pi c x through cos and sin, cat-ed, a per-feature "NLinear" by
torch.einsum("bnk,nkd->bnd") with a ReLU) summed with a linear numerical
tokenizer weight[None] * x[..., None] + bias[None], categorical embeddings
from one nn.Embedding indexed by x_cat + a category_offsets buffer (a
cumsum of the cardinalities), a CLS token expanded and cat-ed at the end,
no pre-norm in the first layer, the last layer computing only the CLS query
(x[:, -1:]), (B, T, H, d) -> (B * H, T, d) attention reshapes, ReGLU
feed-forwards, and a regression + binary head (mse + BCE-with-logits) from
one float and one int64 input.

A multi-task dense-prediction net with homoscedastic uncertainty weighting
(Kendall et al.): a shared encoder with a U-Net-ish skip, three heads brought
to the input size by F.interpolate(size=img.shape[-2:], bilinear), semantic
cross-entropy with ignore_index=255, a scale-invariant log depth loss over a
validity mask (mean d^2 - 0.5 (mean d)^2), a surface-normal cosine loss on
F.normalize-d predictions, learned log-variances exp(-s) L + s, and a dict
output of the total and the detached per-task losses.

A Glow normalizing flow (rosinality's glow-pytorch): dequantisation by
torch.floor and torch.rand_like / n_bins, squeeze by view(b, c, h/2, 2, w/2,
2).permute(0, 1, 3, 5, 2, 4), ActNorm initialised from a warm-up batch in
build() (a Python flag, no tensor branch), invertible 1x1 convolutions both
LU-decomposed (torch.linalg.qr + torch.linalg.lu at init; P, masks, sign and
eye buffers, w_p @ (w_l * l_mask + eye) @ (w_u * u_mask + diag(sign *
exp(w_s))) viewed into F.conv2d) and plain (torch.slogdet of the weight cast
.double(), cast back), affine couplings with sigmoid(log_s + 2) and
log-det sums, ZeroConv2d with F.pad(value=1) and exp(3 * scale), multi-scale
splits with a learned Gaussian prior, and the bits-per-dimension loss with
its prior and log-det parts as detached outputs.

A SuperGlue matcher: keypoints normalised by an image-size buffer, a Conv1d
keypoint encoder over cat(kpts, scores), multi-head attention whose q, k, v
projections are copy.deepcopy-ed from one Conv1d (identical initial
weights), einsum("bdhn,bdhm->bhnm") with (B, d, h, N) views, alternating
self / cross message passing with BatchNorm1d MLPs, einsum score matrices,
log-space optimal transport with a learned dustbin score (bins made by
expand, cat-ed around the scores, new_tensor(1), log of the counts, 20
Sinkhorn iterations of logsumexp unrolled), a negative log-likelihood over
gathered ground-truth assignments and mutual-nearest matching scores
(max, gather, arange ==, torch.where).

An N-BEATS forecaster with RevIN: reversible instance normalisation by
detached mean and sqrt(var + eps) plus an affine, undone on the forecast;
the input and its missing-value mask flipped by .flip(dims=(1,)), doubly
residual stacking (residuals = (residuals - backcast) * mask, forecasts
summed), trend blocks on a polynomial basis buffer and seasonality blocks on
cos / sin basis buffers through torch.einsum, generic blocks; ElementAI's
divide_no_nan (result[result != result] = 0, result[result == inf] = 0:
boolean-mask index_put_) inside sMAPE and MASE losses with a seasonal-naive
scale from strided differences of the insample.

A PPO actor-critic update as CleanRL writes it (rollout length and minibatch
size fixed at construction, as CleanRL's args are): orthogonal init with
nn.init.orthogonal_ and gains, GAE computed under torch.no_grad() by a
reversed Python loop over time writing advantages[t] = lastgaelam = ... in
place, a minibatch picked by torch.randperm in forward, advantage
normalisation, a hybrid action space through torch.distributions
(Categorical(logits=) and Normal with an expanded learned log-std,
validate_args=False), log_prob / entropy, the clipped surrogate
torch.max(pg1, pg2), a clipped value loss, and approx-KL / clip-fraction
diagnostics under no_grad, returned in a dict.

A DGCNN point-cloud classifier: a dynamic kNN graph recomputed in feature
space at every EdgeConv (-x^2 - (-2 x^T x) - x^2 distances, topk indices),
DGCNN's idx + idx_base flattening with the neighbour features picked by
torch.index_select of the (B * N, C) view, cat(x_j - x_i, x_i) over a
(B, 2C, N, k) map, Conv2d + BatchNorm2d + LeakyReLU(0.2), max over the
neighbours, cat of all EdgeConv outputs, Conv1d embedding, adaptive max and
avg pooling cat-ed, and DGCNN's smoothed loss (one-hot by out-of-place
Tensor.scatter, eps / (n - 1) smoothing, log_softmax).

A CBAM + selective-kernel ResNet with DropBlock: SK convolutions (two grouped
branches, one dilated, torch.stack on a new dim, a squeeze, attention
softmax over the branch dim), CBAM channel gates pooling by F.avg_pool2d /
F.max_pool2d with the whole map as the kernel, F.lp_pool2d and a hand
log-sum-exp pool through a shared MLP, CBAM's spatial gate over
cat(max(1)[0], mean(1)), DropBlock2d (a Bernoulli seed mask from torch.rand
< gamma, grown by F.max_pool2d, rescaled by numel / sum), and a
cross-entropy.

A pointer-generator summariser (See et al.) with coverage: a bidirectional
LSTM encoder, h_n / c_n reduced by transpose(0, 1).reshape + Linear, an
nn.LSTMCell decoder unrolled with teacher forcing, Bahdanau attention with a
coverage feature, the padding-renormalised attention, p_gen from a sigmoid,
the extended-vocabulary distribution torch.cat([p_gen * vocab_dist,
zeros(B, n_oov)]).scatter_add(1, enc_ids_extended, (1 - p_gen) * attn),
gather of the gold probabilities, -log(p + eps), the coverage loss
sum(torch.min(attn, coverage)), per-step padding masks and a length-
normalised sum.

A HiFi-GAN training step: a weight-normed (torch.nn.utils.parametrizations)
generator of ConvTranspose1d upsamplers and dilated residual blocks with
F.leaky_relu(0.1); a multi-period discriminator reshaping the waveform to
(B, 1, T / p, p) after an F.pad(mode="reflect") to a multiple of the period
with (k, 1) Conv2d kernels; a multi-scale discriminator with grouped Conv1d
and AvgPool1d(4, 2, padding=2) between scales; feature maps collected into
lists; the LSGAN discriminator loss on y_hat.detach(), the generator loss,
the feature-matching L1 over zipped feature lists, an L1 waveform loss;
a dict of both losses.

Slot Attention (Locatello et al.): a CNN with a soft position embedding (a
Linear on a 4-channel coordinate-grid buffer), slots drawn in forward as
mu + exp(log_sigma) * torch.randn, three iterations of attention normalised
over the slots (softmax(dim=1) + eps, then divided by the sum over inputs),
einsum updates, an nn.GRUCell on (B * K, D) reshapes and a residual MLP; a
spatial-broadcast decoder (slots reshaped to (B * K, D, 1, 1) and .repeat-ed
over a grid, ConvTranspose2d), reshape to (B, K, 4, H, W), torch.split into
colours and masks, mask softmax over the slots, and an MSE reconstruction
(the masks are a second, detached output).

Exported like the zoo (tools/models/common.export), with the zoo's options,
so that `tools/bench/zoo.py --models-script tools/models/unseen10.py` runs
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

nn = torch.nn
F = torch.nn.functional


# ----------------------------------------------------------------------------- Conformer, relative positions

def make_pad_mask(lengths, max_len):
    B = lengths.size(0)
    seq_range = torch.arange(0, max_len, dtype=torch.int64, device=lengths.device)
    seq_range_expand = seq_range.unsqueeze(0).expand(B, max_len)
    return seq_range_expand >= lengths.unsqueeze(-1)


class Conv2dSubsampling4(nn.Module):
    def __init__(self, idim, odim):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(1, odim, 3, 2), nn.ReLU(), nn.Conv2d(odim, odim, 3, 2), nn.ReLU())
        self.out = nn.Linear(odim * (((idim - 1) // 2 - 1) // 2), odim)

    def forward(self, x, x_mask):
        x = self.conv(x.unsqueeze(1))
        b, c, t, f = x.size()
        x = self.out(x.transpose(1, 2).contiguous().view(b, t, c * f))
        return x, x_mask[:, :, :-2:2][:, :, :-2:2]


class RelPositionalEncoding(nn.Module):
    def __init__(self, d, dropout=0.1, max_len=128):
        super().__init__()
        self.xscale = math.sqrt(d)
        self.dropout = nn.Dropout(dropout)
        pos = torch.arange(0, max_len, dtype=torch.float32).unsqueeze(1)
        div = torch.exp(torch.arange(0, d, 2, dtype=torch.float32) * -(math.log(10000.0) / d))
        pe_pos = torch.zeros(max_len, d)
        pe_neg = torch.zeros(max_len, d)
        pe_pos[:, 0::2] = torch.sin(pos * div)
        pe_pos[:, 1::2] = torch.cos(pos * div)
        pe_neg[:, 0::2] = torch.sin(-1 * pos * div)
        pe_neg[:, 1::2] = torch.cos(-1 * pos * div)
        pe = torch.cat([torch.flip(pe_pos, [0]).unsqueeze(0), pe_neg[1:].unsqueeze(0)], dim=1)
        self.register_buffer("pe", pe, persistent=False)

    def forward(self, x):
        T = x.size(1)
        center = self.pe.size(1) // 2
        pos_emb = self.pe[:, center - T + 1: center + T]
        return self.dropout(x * self.xscale), self.dropout(pos_emb)


class RelPositionMultiHeadedAttention(nn.Module):
    def __init__(self, h, d, dropout=0.1):
        super().__init__()
        self.h, self.d_k = h, d // h
        self.linear_q = nn.Linear(d, d)
        self.linear_k = nn.Linear(d, d)
        self.linear_v = nn.Linear(d, d)
        self.linear_out = nn.Linear(d, d)
        self.linear_pos = nn.Linear(d, d, bias=False)
        self.dropout = nn.Dropout(dropout)
        self.pos_bias_u = nn.Parameter(torch.empty(h, self.d_k))
        self.pos_bias_v = nn.Parameter(torch.empty(h, self.d_k))
        nn.init.xavier_uniform_(self.pos_bias_u)
        nn.init.xavier_uniform_(self.pos_bias_v)

    @staticmethod
    def rel_shift(x):
        zero_pad = torch.zeros((*x.size()[:3], 1), device=x.device, dtype=x.dtype)
        x_padded = torch.cat([zero_pad, x], dim=-1)
        x_padded = x_padded.view(*x.size()[:2], x.size(3) + 1, x.size(2))
        return x_padded[:, :, 1:].view_as(x)[:, :, :, : x.size(-1) // 2 + 1]

    def forward(self, x, pos_emb, mask):
        B = x.size(0)
        q = self.linear_q(x).view(B, -1, self.h, self.d_k)                    # B, T, H, dk
        k = self.linear_k(x).view(B, -1, self.h, self.d_k).transpose(1, 2)
        v = self.linear_v(x).view(B, -1, self.h, self.d_k).transpose(1, 2)
        p = self.linear_pos(pos_emb).view(pos_emb.size(0), -1, self.h, self.d_k).transpose(1, 2)
        q_with_bias_u = (q + self.pos_bias_u).transpose(1, 2)
        q_with_bias_v = (q + self.pos_bias_v).transpose(1, 2)
        matrix_ac = torch.matmul(q_with_bias_u, k.transpose(-2, -1))
        matrix_bd = self.rel_shift(torch.matmul(q_with_bias_v, p.transpose(-2, -1)))
        scores = (matrix_ac + matrix_bd) / math.sqrt(self.d_k)
        mask = mask.unsqueeze(1).eq(0)                                          # B, 1, 1, T
        scores = scores.masked_fill(mask, torch.finfo(scores.dtype).min)
        attn = torch.softmax(scores, dim=-1).masked_fill(mask, 0.0)
        out = torch.matmul(self.dropout(attn), v).transpose(1, 2).contiguous().view(B, -1, self.h * self.d_k)
        return self.linear_out(out)


class ConvolutionModule(nn.Module):
    def __init__(self, d, kernel=15):
        super().__init__()
        self.pointwise_conv1 = nn.Conv1d(d, 2 * d, 1)
        self.depthwise_conv = nn.Conv1d(d, d, kernel, padding=(kernel - 1) // 2, groups=d)
        self.norm = nn.BatchNorm1d(d)
        self.pointwise_conv2 = nn.Conv1d(d, d, 1)
        self.activation = nn.SiLU()

    def forward(self, x, mask_pad):
        x = x.transpose(1, 2).masked_fill(~mask_pad, 0.0)                     # B, C, T
        x = F.glu(self.pointwise_conv1(x), dim=1)
        x = self.activation(self.norm(self.depthwise_conv(x)))
        x = self.pointwise_conv2(x).masked_fill(~mask_pad, 0.0)
        return x.transpose(1, 2)


class RelConformerLayer(nn.Module):
    def __init__(self, d, h, drop=0.1):
        super().__init__()
        self.ff1 = nn.Sequential(nn.Linear(d, 4 * d), nn.SiLU(), nn.Dropout(drop), nn.Linear(4 * d, d))
        self.ff2 = nn.Sequential(nn.Linear(d, 4 * d), nn.SiLU(), nn.Dropout(drop), nn.Linear(4 * d, d))
        self.attn = RelPositionMultiHeadedAttention(h, d, drop)
        self.conv = ConvolutionModule(d)
        self.norm_ff1, self.norm_mha, self.norm_conv, self.norm_ff2, self.norm_final = \
            (nn.LayerNorm(d, eps=1e-12) for _ in range(5))
        self.dropout = nn.Dropout(drop)

    def forward(self, x, mask, pos_emb):
        x = x + 0.5 * self.dropout(self.ff1(self.norm_ff1(x)))
        x = x + self.dropout(self.attn(self.norm_mha(x), pos_emb, mask))
        x = x + self.dropout(self.conv(self.norm_conv(x), mask))
        x = x + 0.5 * self.dropout(self.ff2(self.norm_ff2(x)))
        return self.norm_final(x)


class RelConformer(nn.Module):
    def __init__(self, idim=40, d=64, heads=4, layers=3, classes=10):
        super().__init__()
        self.embed = Conv2dSubsampling4(idim, d)
        self.pos_enc = RelPositionalEncoding(d)
        self.layers = nn.ModuleList(RelConformerLayer(d, heads) for _ in range(layers))
        self.head = nn.Linear(d, classes)

    def forward(self, feats, lengths, labels):
        masks = ~make_pad_mask(lengths, feats.size(1)).unsqueeze(1)           # B, 1, T
        x, masks = self.embed(feats, masks)
        x, pos_emb = self.pos_enc(x)
        for layer in self.layers:
            x = layer(x, masks, pos_emb)
        m = masks.transpose(1, 2).to(x.dtype)                                  # B, T', 1
        pooled = (x * m).sum(1) / m.sum(1)
        return F.cross_entropy(self.head(pooled), labels)


# ----------------------------------------------------------------------------- FT-Transformer (tabular)

class FTAttention(nn.Module):
    def __init__(self, d, heads, dropout):
        super().__init__()
        self.W_q, self.W_k, self.W_v, self.W_out = (nn.Linear(d, d) for _ in range(4))
        self.n_heads = heads
        self.dropout = nn.Dropout(dropout)

    def _reshape(self, x):
        B, T, d = x.shape
        dh = d // self.n_heads
        return x.reshape(B, T, self.n_heads, dh).transpose(1, 2).reshape(B * self.n_heads, T, dh)

    def forward(self, x_q, x_kv):
        q, k, v = self.W_q(x_q), self.W_k(x_kv), self.W_v(x_kv)
        B, Tq = q.shape[0], q.shape[1]
        dh = k.shape[-1] // self.n_heads
        q, k, v = self._reshape(q), self._reshape(k), self._reshape(v)
        attention = F.softmax(q @ k.transpose(1, 2) / math.sqrt(dh), dim=-1)
        x = self.dropout(attention) @ v
        x = x.reshape(B, self.n_heads, Tq, dh).transpose(1, 2).reshape(B, Tq, self.n_heads * dh)
        return self.W_out(x)


class FTLayer(nn.Module):
    def __init__(self, d, heads, first):
        super().__init__()
        self.attention = FTAttention(d, heads, 0.2)
        self.attention_normalization = nn.Identity() if first else nn.LayerNorm(d)
        hidden = 4 * d // 3
        self.linear_first = nn.Linear(d, 2 * hidden)          # ReGLU halves it
        self.linear_second = nn.Linear(hidden, d)
        self.ffn_normalization = nn.LayerNorm(d)
        self.ffn_dropout = nn.Dropout(0.1)
        self.residual_dropout = nn.Dropout(0.0)


class FTTransformer(nn.Module):
    def __init__(self, n_num=8, cards=(3, 7, 11, 5), d=64, depth=3, heads=8, n_freq=8):
        super().__init__()
        self.freq = nn.Parameter(torch.randn(n_num, n_freq) * 0.1)
        self.plr_weight = nn.Parameter(torch.randn(n_num, 2 * n_freq, d) / math.sqrt(2 * n_freq))
        self.plr_bias = nn.Parameter(torch.zeros(n_num, d))
        s = 1 / math.sqrt(d)
        self.num_weight = nn.Parameter(torch.empty(n_num, d).uniform_(-s, s))
        self.num_bias = nn.Parameter(torch.empty(n_num, d).uniform_(-s, s))
        self.register_buffer("category_offsets", torch.tensor([0] + list(cards[:-1])).cumsum(0))
        self.cat_embeddings = nn.Embedding(sum(cards), d)
        self.cat_bias = nn.Parameter(torch.empty(len(cards), d).uniform_(-s, s))
        self.cls = nn.Parameter(torch.empty(d).uniform_(-s, s))
        self.blocks = nn.ModuleList(FTLayer(d, heads, i == 0) for i in range(depth))
        self.head = nn.Sequential(nn.LayerNorm(d), nn.ReLU(), nn.Linear(d, 2))

    @staticmethod
    def reglu(x):
        a, b = x.chunk(2, dim=-1)
        return a * F.relu(b)

    def forward(self, x_num, x_cat, y_reg, y_bin):
        x_p = 2 * math.pi * self.freq[None] * x_num[..., None]                 # B, n, k
        x_p = torch.cat([torch.cos(x_p), torch.sin(x_p)], -1)
        x_n = F.relu(torch.einsum("bnk,nkd->bnd", x_p, self.plr_weight) + self.plr_bias)
        x_n = x_n + self.num_weight[None] * x_num[..., None] + self.num_bias[None]
        x_c = self.cat_embeddings(x_cat + self.category_offsets[None]) + self.cat_bias[None]
        x = torch.cat([x_n, x_c, self.cls.view(1, 1, -1).expand(len(x_n), 1, -1)], dim=1)
        for i, layer in enumerate(self.blocks):
            last = i + 1 == len(self.blocks)
            x_residual = layer.attention_normalization(x)
            if last:
                x_residual = layer.attention(x_residual[:, -1:], x_residual)
                x = x[:, -1:]
            else:
                x_residual = layer.attention(x_residual, x_residual)
            x = x + layer.residual_dropout(x_residual)
            x_residual = layer.ffn_normalization(x)
            x_residual = layer.linear_second(layer.ffn_dropout(self.reglu(layer.linear_first(x_residual))))
            x = x + layer.residual_dropout(x_residual)
        out = self.head(x[:, -1])
        return F.mse_loss(out[:, 0], y_reg) + F.binary_cross_entropy_with_logits(out[:, 1], y_bin)


# ----------------------------------------------------------------------------- multi-task, uncertainty weighting

def conv_bn_relu(ci, co, stride=1):
    return nn.Sequential(nn.Conv2d(ci, co, 3, stride, 1, bias=False), nn.BatchNorm2d(co), nn.ReLU(inplace=True))


class MTLUncertainty(nn.Module):
    def __init__(self, classes=6):
        super().__init__()
        self.enc1 = nn.Sequential(conv_bn_relu(3, 24, 2), conv_bn_relu(24, 24))        # /2
        self.enc2 = nn.Sequential(conv_bn_relu(24, 48, 2), conv_bn_relu(48, 48))       # /4
        self.enc3 = nn.Sequential(conv_bn_relu(48, 64, 2), conv_bn_relu(64, 64))       # /8
        self.fuse = conv_bn_relu(64 + 48, 48)

        def head(co):
            return nn.Sequential(conv_bn_relu(48, 32), nn.Conv2d(32, co, 1))
        self.seg_head, self.depth_head, self.normal_head = head(classes), head(1), head(3)
        self.log_vars = nn.Parameter(torch.zeros(3))

    def forward(self, img, seg_gt, depth_gt, normal_gt):
        f2 = self.enc2(self.enc1(img))
        f3 = self.enc3(f2)
        f = self.fuse(torch.cat([F.interpolate(f3, size=f2.shape[-2:], mode="bilinear", align_corners=False), f2], 1))
        size = img.shape[-2:]
        seg = F.interpolate(self.seg_head(f), size=size, mode="bilinear", align_corners=False)
        depth = F.softplus(F.interpolate(self.depth_head(f), size=size, mode="bilinear", align_corners=False))
        normal = F.interpolate(self.normal_head(f), size=size, mode="bilinear", align_corners=False)

        l_seg = F.cross_entropy(seg, seg_gt, ignore_index=255)
        valid = (depth_gt > 0).to(depth.dtype)
        n = valid.sum().clamp(min=1)
        d = (torch.log(depth.clamp(min=1e-3)) - torch.log(depth_gt.clamp(min=1e-3))) * valid
        l_depth = (d ** 2).sum() / n - 0.5 * (d.sum() / n) ** 2
        l_normal = (1 - F.cosine_similarity(F.normalize(normal, dim=1), normal_gt, dim=1)).mean()

        precision = torch.exp(-self.log_vars)
        total = (precision[0] * l_seg + self.log_vars[0]
                 + 0.5 * precision[1] * l_depth + 0.5 * self.log_vars[1]
                 + 0.5 * precision[2] * l_normal + 0.5 * self.log_vars[2])
        return {"loss": total, "seg": l_seg.detach(), "depth": l_depth.detach(), "normal": l_normal.detach()}


# ----------------------------------------------------------------------------- Glow

def logabs(x):
    return torch.log(torch.abs(x))


class ActNorm(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(1, C, 1, 1))
        self.scale = nn.Parameter(torch.ones(1, C, 1, 1))
        self.initialized = False            # a Python flag: build() runs a warm-up batch

    def initialize(self, x):
        with torch.no_grad():
            flatten = x.permute(1, 0, 2, 3).contiguous().view(x.shape[1], -1)
            mean = flatten.mean(1).view(1, -1, 1, 1)
            std = flatten.std(1).view(1, -1, 1, 1)
            self.loc.data.copy_(-mean)
            self.scale.data.copy_(1 / (std + 1e-6))

    def forward(self, x):
        _, _, H, W = x.shape
        if not self.initialized:
            self.initialize(x)
            self.initialized = True
        logdet = H * W * torch.sum(logabs(self.scale))
        return self.scale * (x + self.loc), logdet


class InvConv2d(nn.Module):
    def __init__(self, C):
        super().__init__()
        q, _ = torch.linalg.qr(torch.randn(C, C))
        self.weight = nn.Parameter(q.unsqueeze(2).unsqueeze(3))

    def forward(self, x):
        _, _, H, W = x.shape
        out = F.conv2d(x, self.weight)
        logdet = H * W * torch.slogdet(self.weight.squeeze().double())[1].to(x.dtype)
        return out, logdet


class InvConv2dLU(nn.Module):
    def __init__(self, C):
        super().__init__()
        q, _ = torch.linalg.qr(torch.randn(C, C))
        w_p, w_l, w_u = torch.linalg.lu(q)
        w_s = torch.diagonal(w_u)
        u_mask = torch.triu(torch.ones(C, C), 1)
        self.register_buffer("w_p", w_p)
        self.register_buffer("u_mask", u_mask)
        self.register_buffer("l_mask", u_mask.T.contiguous())
        self.register_buffer("s_sign", torch.sign(w_s))
        self.register_buffer("l_eye", torch.eye(C))
        self.w_l = nn.Parameter(w_l)
        self.w_s = nn.Parameter(logabs(w_s))
        self.w_u = nn.Parameter(torch.triu(w_u, 1))

    def calc_weight(self):
        weight = self.w_p @ (self.w_l * self.l_mask + self.l_eye) @ \
            ((self.w_u * self.u_mask) + torch.diag(self.s_sign * torch.exp(self.w_s)))
        return weight.unsqueeze(2).unsqueeze(3)

    def forward(self, x):
        _, _, H, W = x.shape
        return F.conv2d(x, self.calc_weight()), H * W * torch.sum(self.w_s)


class ZeroConv2d(nn.Module):
    def __init__(self, ci, co):
        super().__init__()
        self.conv = nn.Conv2d(ci, co, 3, padding=0)
        # glow-pytorch zero-initialises this conv; a near-zero init keeps the
        # gradients of the layers before it from being exactly zero on step one.
        nn.init.normal_(self.conv.weight, std=1e-3)
        self.conv.bias.data.zero_()
        self.scale = nn.Parameter(torch.zeros(1, co, 1, 1))

    def forward(self, x):
        out = self.conv(F.pad(x, [1, 1, 1, 1], value=1))
        return out * torch.exp(self.scale * 3)


class AffineCoupling(nn.Module):
    def __init__(self, C, filt=32):
        super().__init__()
        self.net = nn.Sequential(nn.Conv2d(C // 2, filt, 3, padding=1), nn.ReLU(inplace=True),
                                 nn.Conv2d(filt, filt, 1), nn.ReLU(inplace=True), ZeroConv2d(filt, C))
        self.net[0].weight.data.normal_(0, 0.05)
        self.net[0].bias.data.zero_()
        self.net[2].weight.data.normal_(0, 0.05)
        self.net[2].bias.data.zero_()

    def forward(self, x):
        in_a, in_b = x.chunk(2, 1)
        log_s, t = self.net(in_a).chunk(2, 1)
        s = torch.sigmoid(log_s + 2)
        out_b = (in_b + t) * s
        logdet = torch.sum(torch.log(s).view(x.shape[0], -1), 1)
        return torch.cat([in_a, out_b], 1), logdet


class FlowStep(nn.Module):
    def __init__(self, C, lu):
        super().__init__()
        self.actnorm = ActNorm(C)
        self.invconv = InvConv2dLU(C) if lu else InvConv2d(C)
        self.coupling = AffineCoupling(C)

    def forward(self, x):
        out, logdet = self.actnorm(x)
        out, det1 = self.invconv(out)
        out, det2 = self.coupling(out)
        return out, logdet + det1 + det2


def gaussian_log_p(x, mean, log_sd):
    return -0.5 * math.log(2 * math.pi) - log_sd - 0.5 * (x - mean) ** 2 / torch.exp(2 * log_sd)


class GlowBlock(nn.Module):
    def __init__(self, C, n_flow, split, lu):
        super().__init__()
        sq = C * 4
        self.flows = nn.ModuleList(FlowStep(sq, lu) for _ in range(n_flow))
        self.split = split
        self.prior = ZeroConv2d(C * 2, C * 4) if split else ZeroConv2d(C * 4, C * 8)

    def forward(self, x):
        b, c, h, w = x.shape
        squeezed = x.view(b, c, h // 2, 2, w // 2, 2).permute(0, 1, 3, 5, 2, 4)
        out = squeezed.contiguous().view(b, c * 4, h // 2, w // 2)
        logdet = 0
        for flow in self.flows:
            out, det = flow(out)
            logdet = logdet + det
        if self.split:
            out, z_new = out.chunk(2, 1)
            mean, log_sd = self.prior(out).chunk(2, 1)
        else:
            z_new = out
            mean, log_sd = self.prior(torch.zeros_like(out)).chunk(2, 1)
        log_p = gaussian_log_p(z_new, mean, log_sd).view(b, -1).sum(1)
        return out, logdet, log_p


class Glow(nn.Module):
    def __init__(self, C=3, n_flow=4, n_block=3, n_bits=5):
        super().__init__()
        self.n_bins = 2.0 ** n_bits
        self.n_bits = n_bits
        blocks, c = [], C
        for i in range(n_block - 1):
            blocks.append(GlowBlock(c, n_flow, split=True, lu=(i % 2 == 0)))
            c *= 2
        blocks.append(GlowBlock(c, n_flow, split=False, lu=False))
        self.blocks = nn.ModuleList(blocks)

    def forward(self, image):
        x = torch.floor(image * 255 / 2 ** (8 - self.n_bits)) / self.n_bins - 0.5
        x = x + torch.rand_like(x) / self.n_bins
        log_p_sum, logdet, out = 0, 0, x
        for block in self.blocks:
            out, det, log_p = block(out)
            logdet = logdet + det
            log_p_sum = log_p_sum + log_p
        n_pixel = image.shape[1] * image.shape[2] * image.shape[3]
        loss = -math.log(self.n_bins) * n_pixel + logdet + log_p_sum
        denom = math.log(2) * n_pixel
        # bits per dimension, and its two parts as detached diagnostics (their sum
        # with the loss is a constant, so returning them live would cancel the gradient)
        return (-loss / denom).mean(), (log_p_sum / denom).mean().detach(), (logdet / denom).mean().detach()


# ----------------------------------------------------------------------------- SuperGlue

def mlp1d(channels, do_bn=True):
    layers = []
    for i in range(1, len(channels)):
        layers.append(nn.Conv1d(channels[i - 1], channels[i], 1, bias=True))
        if i < len(channels) - 1:
            if do_bn:
                layers.append(nn.BatchNorm1d(channels[i]))
            layers.append(nn.ReLU())
    return nn.Sequential(*layers)


class KeypointEncoder(nn.Module):
    def __init__(self, d, layers):
        super().__init__()
        self.encoder = mlp1d([3] + layers + [d])
        nn.init.constant_(self.encoder[-1].bias, 0.0)

    def forward(self, kpts, scores):
        return self.encoder(torch.cat([kpts.transpose(1, 2), scores.unsqueeze(1)], dim=1))


class SGMultiHeadedAttention(nn.Module):
    def __init__(self, h, d):
        super().__init__()
        self.dim, self.h = d // h, h
        self.merge = nn.Conv1d(d, d, 1)
        self.proj = nn.ModuleList([copy.deepcopy(self.merge) for _ in range(3)])

    def forward(self, query, key, value):
        B = query.size(0)
        q, k, v = [layer(x).view(B, self.dim, self.h, -1) for layer, x in zip(self.proj, (query, key, value))]
        scores = torch.einsum("bdhn,bdhm->bhnm", q, k) / self.dim ** .5
        prob = F.softmax(scores, dim=-1)
        x = torch.einsum("bhnm,bdhm->bdhn", prob, v)
        return self.merge(x.contiguous().view(B, self.dim * self.h, -1))


class AttentionalPropagation(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.attn = SGMultiHeadedAttention(h, d)
        self.mlp = mlp1d([d * 2, d * 2, d])
        nn.init.constant_(self.mlp[-1].bias, 0.0)

    def forward(self, x, source):
        return self.mlp(torch.cat([x, self.attn(x, source, source)], dim=1))


def log_sinkhorn_iterations(Z, log_mu, log_nu, iters):
    u, v = torch.zeros_like(log_mu), torch.zeros_like(log_nu)
    for _ in range(iters):
        u = log_mu - torch.logsumexp(Z + v.unsqueeze(1), dim=2)
        v = log_nu - torch.logsumexp(Z + u.unsqueeze(2), dim=1)
    return Z + u.unsqueeze(2) + v.unsqueeze(1)


def log_optimal_transport(scores, alpha, iters):
    b, m, n = scores.shape
    one = scores.new_tensor(1)
    ms, ns = (m * one).to(scores), (n * one).to(scores)
    bins0 = alpha.expand(b, m, 1)
    bins1 = alpha.expand(b, 1, n)
    alpha = alpha.expand(b, 1, 1)
    couplings = torch.cat([torch.cat([scores, bins0], -1), torch.cat([bins1, alpha], -1)], 1)
    norm = -(ms + ns).log()
    log_mu = torch.cat([norm.expand(m), ns.log()[None] + norm])
    log_nu = torch.cat([norm.expand(n), ms.log()[None] + norm])
    log_mu, log_nu = log_mu[None].expand(b, -1), log_nu[None].expand(b, -1)
    Z = log_sinkhorn_iterations(couplings, log_mu, log_nu, iters)
    return Z - norm


def arange_like(x, dim):
    return x.new_ones(x.shape[dim]).cumsum(0) - 1


class SuperGlue(nn.Module):
    def __init__(self, d=64, heads=4, gnn=("self", "cross") * 2, iters=20, image=(480, 640)):
        super().__init__()
        self.kenc = KeypointEncoder(d, [16, 32])
        self.layers = nn.ModuleList(AttentionalPropagation(d, heads) for _ in gnn)
        self.names = list(gnn)
        self.final_proj = nn.Conv1d(d, d, 1, bias=True)
        self.bin_score = nn.Parameter(torch.tensor(1.))
        self.iters, self.d = iters, d
        self.register_buffer("image_size", torch.tensor([image[1], image[0]], dtype=torch.float32))

    def normalize_keypoints(self, kpts):
        size = self.image_size.to(kpts)[None]
        center = size / 2
        scaling = size.max(1, keepdim=True).values * 0.7
        return (kpts - center[:, None, :]) / scaling[:, None, :]

    def forward(self, kpts0, scores0, desc0, kpts1, scores1, desc1, gt0, gt1):
        desc0 = desc0 + self.kenc(self.normalize_keypoints(kpts0), scores0)
        desc1 = desc1 + self.kenc(self.normalize_keypoints(kpts1), scores1)
        for layer, name in zip(self.layers, self.names):
            if name == "cross":
                src0, src1 = desc1, desc0
            else:
                src0, src1 = desc0, desc1
            delta0, delta1 = layer(desc0, src0), layer(desc1, src1)
            desc0, desc1 = desc0 + delta0, desc1 + delta1
        mdesc0, mdesc1 = self.final_proj(desc0), self.final_proj(desc1)
        scores = torch.einsum("bdn,bdm->bnm", mdesc0, mdesc1) / self.d ** .5
        Z = log_optimal_transport(scores, self.bin_score, self.iters)
        N, M = scores.shape[1], scores.shape[2]
        l0 = Z[:, :N, :].gather(2, gt0.unsqueeze(2)).squeeze(2)               # B, N (dustbin column = M)
        l1 = Z[:, :, :M].gather(1, gt1.unsqueeze(1)).squeeze(1)               # B, M (dustbin row = N)
        unmatched1 = (gt1 == N).to(Z.dtype)
        loss = -(l0.sum(1) + (l1 * unmatched1).sum(1)).mean() / (N + M)
        max0, max1 = Z[:, :-1, :-1].max(2), Z[:, :-1, :-1].max(1)
        indices0, indices1 = max0.indices, max1.indices
        mutual0 = arange_like(indices0, 1)[None] == indices1.gather(1, indices0)
        mscores0 = torch.where(mutual0, max0.values.exp(), Z.new_tensor(0))
        return loss, mscores0


# ----------------------------------------------------------------------------- N-BEATS + RevIN

def divide_no_nan(a, b):
    result = a / b
    result[result != result] = .0
    result[result == float("inf")] = .0
    return result


class RevIN(nn.Module):
    def __init__(self, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.affine_weight = nn.Parameter(torch.ones(1))
        self.affine_bias = nn.Parameter(torch.zeros(1))

    def norm(self, x):
        self.mean = torch.mean(x, dim=1, keepdim=True).detach()
        self.stdev = torch.sqrt(torch.var(x, dim=1, keepdim=True, unbiased=False) + self.eps).detach()
        return (x - self.mean) / self.stdev * self.affine_weight + self.affine_bias

    def denorm(self, x):
        x = (x - self.affine_bias) / (self.affine_weight + self.eps * self.eps)
        return x * self.stdev + self.mean


class NBeatsBlock(nn.Module):
    def __init__(self, L, H, theta, width, layers=4):
        super().__init__()
        fc = [nn.Linear(L, width)] + [nn.Linear(width, width) for _ in range(layers - 1)]
        self.layers = nn.ModuleList(fc)
        self.basis_parameters = nn.Linear(width, theta)

    def theta(self, x):
        for layer in self.layers:
            x = torch.relu(layer(x))
        return self.basis_parameters(x)


class GenericBlock(NBeatsBlock):
    def __init__(self, L, H, width):
        super().__init__(L, H, L + H, width)
        self.L = L

    def forward(self, x):
        theta = self.theta(x)
        return theta[:, :self.L], theta[:, self.L:]


class TrendBlock(NBeatsBlock):
    def __init__(self, L, H, width, degree=3):
        super().__init__(L, H, 2 * (degree + 1), width)
        self.p = degree + 1
        self.register_buffer("backcast_time", torch.stack(
            [(torch.arange(L, dtype=torch.float32) / L) ** i for i in range(self.p)]))
        self.register_buffer("forecast_time", torch.stack(
            [(torch.arange(H, dtype=torch.float32) / H) ** i for i in range(self.p)]))

    def forward(self, x):
        theta = self.theta(x)
        backcast = torch.einsum("bp,pt->bt", theta[:, self.p:], self.backcast_time)
        forecast = torch.einsum("bp,pt->bt", theta[:, :self.p], self.forecast_time)
        return backcast, forecast


class SeasonalityBlock(NBeatsBlock):
    def __init__(self, L, H, width, harmonics=2):
        freqs = torch.cat([torch.zeros(1), torch.arange(harmonics, harmonics / 2 * H, dtype=torch.float32) / harmonics])
        n = len(freqs)
        super().__init__(L, H, 4 * n, width)
        self.n = n
        fg_b = -2 * math.pi * (torch.arange(L, dtype=torch.float32)[:, None] / H) * freqs[None]
        fg_f = 2 * math.pi * (torch.arange(H, dtype=torch.float32)[:, None] / H) * freqs[None]
        self.register_buffer("backcast_cos", torch.cos(fg_b).t().contiguous())
        self.register_buffer("backcast_sin", torch.sin(fg_b).t().contiguous())
        self.register_buffer("forecast_cos", torch.cos(fg_f).t().contiguous())
        self.register_buffer("forecast_sin", torch.sin(fg_f).t().contiguous())

    def forward(self, x):
        theta = self.theta(x)
        n = self.n
        forecast = torch.einsum("bp,pt->bt", theta[:, :n], self.forecast_cos) + \
            torch.einsum("bp,pt->bt", theta[:, n:2 * n], self.forecast_sin)
        backcast = torch.einsum("bp,pt->bt", theta[:, 2 * n:3 * n], self.backcast_cos) + \
            torch.einsum("bp,pt->bt", theta[:, 3 * n:], self.backcast_sin)
        return backcast, forecast


class NBeats(nn.Module):
    def __init__(self, L=96, H=24, width=128, season=12):
        super().__init__()
        self.revin = RevIN()
        self.blocks = nn.ModuleList([TrendBlock(L, H, width), TrendBlock(L, H, width),
                                     SeasonalityBlock(L, H, 2 * width), SeasonalityBlock(L, H, 2 * width),
                                     GenericBlock(L, H, width), GenericBlock(L, H, width)])
        self.season = season

    def smape_loss(self, forecast, target, mask):
        return 200 * torch.mean(divide_no_nan(torch.abs(forecast - target),
                                              torch.abs(forecast.data) + torch.abs(target.data)) * mask)

    def mase_loss(self, insample, forecast, target, mask):
        masep = torch.mean(torch.abs(insample[:, self.season:] - insample[:, :-self.season]), dim=1)
        masked_masep_inv = divide_no_nan(mask, masep[:, None])
        return torch.mean(torch.abs(target - forecast) * masked_masep_inv)

    def forward(self, x, x_mask, y, y_mask):
        z = self.revin.norm(x)
        residuals = z.flip(dims=(1,))
        input_mask = x_mask.flip(dims=(1,))
        forecast = z[:, -1:]
        for block in self.blocks:
            backcast, block_forecast = block(residuals)
            residuals = (residuals - backcast) * input_mask
            forecast = forecast + block_forecast
        forecast = self.revin.denorm(forecast)
        return self.smape_loss(forecast, y, y_mask) + self.mase_loss(x, forecast, y, y_mask)


# ----------------------------------------------------------------------------- PPO (CleanRL)

def layer_init(layer, std=math.sqrt(2), bias_const=0.0):
    nn.init.orthogonal_(layer.weight, std)
    nn.init.constant_(layer.bias, bias_const)
    return layer


class PPOAgent(nn.Module):
    def __init__(self, num_steps, minibatch_size, obs_dim=8, n_discrete=4, n_cont=2, hidden=128, gamma=0.99,
                 gae_lambda=0.95, clip_coef=0.2, ent_coef=0.01, vf_coef=0.5):
        super().__init__()
        self.critic = nn.Sequential(layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
                                    layer_init(nn.Linear(hidden, hidden)), nn.Tanh(),
                                    layer_init(nn.Linear(hidden, 1), std=1.0))
        self.actor_trunk = nn.Sequential(layer_init(nn.Linear(obs_dim, hidden)), nn.Tanh(),
                                         layer_init(nn.Linear(hidden, hidden)), nn.Tanh())
        self.actor_logits = layer_init(nn.Linear(hidden, n_discrete), std=0.01)
        self.actor_mean = layer_init(nn.Linear(hidden, n_cont), std=0.01)
        self.actor_logstd = nn.Parameter(torch.zeros(1, n_cont))
        self.gamma, self.gae_lambda, self.clip_coef = gamma, gae_lambda, clip_coef
        self.ent_coef, self.vf_coef = ent_coef, vf_coef
        self.num_steps, self.minibatch_size = num_steps, minibatch_size

    def get_value(self, x):
        return self.critic(x)

    def get_action_and_value(self, x, action_d, action_c):
        h = self.actor_trunk(x)
        logits = self.actor_logits(h)
        mean = self.actor_mean(h)
        std = torch.exp(self.actor_logstd.expand_as(mean))
        cat = torch.distributions.Categorical(logits=logits, validate_args=False)
        normal = torch.distributions.Normal(mean, std, validate_args=False)
        logprob = cat.log_prob(action_d) + normal.log_prob(action_c).sum(1)
        entropy = cat.entropy() + normal.entropy().sum(1)
        return logprob, entropy, self.critic(x)

    def forward(self, obs, next_obs, actions_d, actions_c, logprobs, rewards, dones, next_done, values):
        T = self.num_steps
        with torch.no_grad():
            next_value = self.get_value(next_obs).reshape(1, -1)
            advantages = torch.zeros_like(rewards)
            lastgaelam = 0
            for t in reversed(range(T)):
                if t == T - 1:
                    nextnonterminal = 1.0 - next_done
                    nextvalues = next_value
                else:
                    nextnonterminal = 1.0 - dones[t + 1]
                    nextvalues = values[t + 1]
                delta = rewards[t] + self.gamma * nextvalues * nextnonterminal - values[t]
                advantages[t] = lastgaelam = delta + self.gamma * self.gae_lambda * nextnonterminal * lastgaelam
            returns = advantages + values

        b_obs = obs.reshape((-1, obs.shape[-1]))
        b_logprobs = logprobs.reshape(-1)
        b_actions_d = actions_d.reshape(-1)
        b_actions_c = actions_c.reshape((-1, actions_c.shape[-1]))
        b_advantages = advantages.reshape(-1)
        b_returns = returns.reshape(-1)
        b_values = values.reshape(-1)
        mb_inds = torch.randperm(b_obs.shape[0], device=obs.device)[: self.minibatch_size]

        newlogprob, entropy, newvalue = self.get_action_and_value(b_obs[mb_inds], b_actions_d[mb_inds],
                                                                  b_actions_c[mb_inds])
        logratio = newlogprob - b_logprobs[mb_inds]
        ratio = logratio.exp()
        with torch.no_grad():
            approx_kl = ((ratio - 1) - logratio).mean()
            clipfrac = ((ratio - 1.0).abs() > self.clip_coef).float().mean()

        mb_advantages = b_advantages[mb_inds]
        mb_advantages = (mb_advantages - mb_advantages.mean()) / (mb_advantages.std() + 1e-8)
        pg_loss1 = -mb_advantages * ratio
        pg_loss2 = -mb_advantages * torch.clamp(ratio, 1 - self.clip_coef, 1 + self.clip_coef)
        pg_loss = torch.max(pg_loss1, pg_loss2).mean()

        newvalue = newvalue.view(-1)
        v_loss_unclipped = (newvalue - b_returns[mb_inds]) ** 2
        v_clipped = b_values[mb_inds] + torch.clamp(newvalue - b_values[mb_inds], -self.clip_coef, self.clip_coef)
        v_loss_clipped = (v_clipped - b_returns[mb_inds]) ** 2
        v_loss = 0.5 * torch.max(v_loss_unclipped, v_loss_clipped).mean()
        entropy_loss = entropy.mean()
        loss = pg_loss - self.ent_coef * entropy_loss + v_loss * self.vf_coef
        return {"loss": loss, "approx_kl": approx_kl, "clipfrac": clipfrac}


# ----------------------------------------------------------------------------- DGCNN

def knn(x, k):
    inner = -2 * torch.matmul(x.transpose(2, 1), x)
    xx = torch.sum(x ** 2, dim=1, keepdim=True)
    pairwise_distance = -xx - inner - xx.transpose(2, 1)
    return pairwise_distance.topk(k=k, dim=-1)[1]                                # B, N, k


def get_graph_feature(x, k):
    batch_size, num_dims, num_points = x.size()
    idx = knn(x, k)
    idx_base = torch.arange(0, batch_size, device=x.device).view(-1, 1, 1) * num_points
    idx = (idx + idx_base).view(-1)
    x = x.transpose(2, 1).contiguous()
    feature = torch.index_select(x.view(batch_size * num_points, -1), 0, idx)
    feature = feature.view(batch_size, num_points, k, num_dims)
    x = x.view(batch_size, num_points, 1, num_dims).repeat(1, 1, k, 1)
    return torch.cat((feature - x, x), dim=3).permute(0, 3, 1, 2).contiguous()


class DGCNN(nn.Module):
    def __init__(self, k=8, chans=(32, 32, 48, 64), emb=128, classes=10):
        super().__init__()
        self.k = k
        convs, ci = [], 3
        for co in chans:
            convs.append(nn.Sequential(nn.Conv2d(ci * 2, co, 1, bias=False), nn.BatchNorm2d(co),
                                       nn.LeakyReLU(negative_slope=0.2)))
            ci = co
        self.edge_convs = nn.ModuleList(convs)
        self.conv5 = nn.Sequential(nn.Conv1d(sum(chans), emb, 1, bias=False), nn.BatchNorm1d(emb),
                                   nn.LeakyReLU(negative_slope=0.2))
        self.linear1 = nn.Linear(emb * 2, 128, bias=False)
        self.bn6 = nn.BatchNorm1d(128)
        self.dp1 = nn.Dropout(p=0.5)
        self.linear2 = nn.Linear(128, classes)

    @staticmethod
    def cal_loss(pred, gold, eps=0.2):
        n_class = pred.size(1)
        one_hot = torch.zeros_like(pred).scatter(1, gold.view(-1, 1), 1)
        one_hot = one_hot * (1 - eps) + (1 - one_hot) * eps / (n_class - 1)
        log_prb = F.log_softmax(pred, dim=1)
        return -(one_hot * log_prb).sum(dim=1).mean()

    def forward(self, x, labels):
        feats = []
        for conv in self.edge_convs:
            x = conv(get_graph_feature(x, self.k)).max(dim=-1, keepdim=False)[0]
            feats.append(x)
        x = self.conv5(torch.cat(feats, dim=1))
        x = torch.cat((F.adaptive_max_pool1d(x, 1).view(x.size(0), -1),
                       F.adaptive_avg_pool1d(x, 1).view(x.size(0), -1)), 1)
        x = self.dp1(F.leaky_relu(self.bn6(self.linear1(x)), negative_slope=0.2))
        return self.cal_loss(self.linear2(x), labels)


# ----------------------------------------------------------------------------- CBAM + SK + DropBlock

def logsumexp_2d(tensor):
    tensor_flatten = tensor.view(tensor.size(0), tensor.size(1), -1)
    s, _ = torch.max(tensor_flatten, dim=2, keepdim=True)
    return s + (tensor_flatten - s).exp().sum(dim=2, keepdim=True).log()


class ChannelGate(nn.Module):
    def __init__(self, C, reduction=8, pool_types=("avg", "max", "lp", "lse")):
        super().__init__()
        self.mlp = nn.Sequential(nn.Flatten(), nn.Linear(C, C // reduction), nn.ReLU(), nn.Linear(C // reduction, C))
        self.pool_types = pool_types

    def forward(self, x):
        channel_att_sum = None
        kernel = (x.size(2), x.size(3))
        for pool_type in self.pool_types:
            if pool_type == "avg":
                pool = F.avg_pool2d(x, kernel, stride=kernel)
            elif pool_type == "max":
                pool = F.max_pool2d(x, kernel, stride=kernel)
            elif pool_type == "lp":
                pool = F.lp_pool2d(x, 2, kernel, stride=kernel)
            else:
                pool = logsumexp_2d(x)
            raw = self.mlp(pool)
            channel_att_sum = raw if channel_att_sum is None else channel_att_sum + raw
        scale = torch.sigmoid(channel_att_sum).unsqueeze(2).unsqueeze(3).expand_as(x)
        return x * scale


class SpatialGate(nn.Module):
    def __init__(self):
        super().__init__()
        self.spatial = nn.Sequential(nn.Conv2d(2, 1, 7, padding=3, bias=False), nn.BatchNorm2d(1, eps=1e-5, momentum=0.01))

    def forward(self, x):
        x_compress = torch.cat((torch.max(x, 1)[0].unsqueeze(1), torch.mean(x, 1).unsqueeze(1)), dim=1)
        return x * torch.sigmoid(self.spatial(x_compress))


class SKConv(nn.Module):
    def __init__(self, C, M=2, G=8, r=4, L=16):
        super().__init__()
        d = max(C // r, L)
        self.M, self.C = M, C
        self.convs = nn.ModuleList(
            nn.Sequential(nn.Conv2d(C, C, 3, padding=1 + i, dilation=1 + i, groups=G, bias=False),
                          nn.BatchNorm2d(C), nn.ReLU(inplace=True)) for i in range(M))
        self.fc = nn.Sequential(nn.Conv2d(C, d, 1, bias=False), nn.BatchNorm2d(d), nn.ReLU(inplace=True))
        self.fcs = nn.ModuleList(nn.Conv2d(d, C, 1) for _ in range(M))
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x):
        feats = torch.stack([conv(x) for conv in self.convs], dim=1)            # B, M, C, H, W
        feats_U = torch.sum(feats, dim=1)
        feats_Z = self.fc(feats_U.mean((2, 3), keepdim=True))
        attention = torch.stack([fc(feats_Z) for fc in self.fcs], dim=1)         # B, M, C, 1, 1
        attention = self.softmax(attention)
        return torch.sum(feats * attention, dim=1)


class DropBlock2d(nn.Module):
    def __init__(self, drop_prob=0.1, block_size=3):
        super().__init__()
        self.drop_prob, self.block_size = drop_prob, block_size

    def forward(self, x):
        if not self.training or self.drop_prob == 0.0:
            return x
        gamma = self.drop_prob / (self.block_size ** 2)
        mask = (torch.rand(x.shape[0], *x.shape[2:], device=x.device) < gamma).to(x.dtype)
        block_mask = 1 - F.max_pool2d(mask[:, None, :, :], kernel_size=(self.block_size, self.block_size),
                                      stride=(1, 1), padding=self.block_size // 2)
        out = x * block_mask
        return out * block_mask.numel() / block_mask.sum()


class SKCBAMBlock(nn.Module):
    def __init__(self, ci, co, stride):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(ci, co, 1, bias=False), nn.BatchNorm2d(co), nn.ReLU(inplace=True))
        self.pool = nn.AvgPool2d(2) if stride == 2 else nn.Identity()
        self.sk = SKConv(co)
        self.conv3 = nn.Sequential(nn.Conv2d(co, co, 1, bias=False), nn.BatchNorm2d(co))
        self.cg = ChannelGate(co)
        self.sg = SpatialGate()
        self.drop = DropBlock2d()
        self.short = nn.Identity() if (ci == co and stride == 1) else \
            nn.Sequential(nn.AvgPool2d(stride) if stride > 1 else nn.Identity(),
                          nn.Conv2d(ci, co, 1, bias=False), nn.BatchNorm2d(co))

    def forward(self, x):
        out = self.conv3(self.sk(self.pool(self.conv1(x))))
        out = self.drop(self.sg(self.cg(out)))
        return F.relu(out + self.short(x))


class CBAMSKNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1, bias=False), nn.BatchNorm2d(24), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        self.blocks = nn.Sequential(SKCBAMBlock(24, 32, 1), SKCBAMBlock(32, 64, 2), SKCBAMBlock(64, 64, 1),
                                    SKCBAMBlock(64, 96, 2))
        self.fc = nn.Linear(96, classes)

    def forward(self, img, labels):
        x = self.blocks(self.stem(img))
        return F.cross_entropy(self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)), labels)


# ----------------------------------------------------------------------------- pointer-generator

class PointerGenerator(nn.Module):
    def __init__(self, vocab=1000, n_oov=8, emb=48, hid=64, cov_loss_wt=1.0, eps=1e-12):
        super().__init__()
        self.embedding = nn.Embedding(vocab, emb)
        self.lstm = nn.LSTM(emb, hid, num_layers=1, batch_first=True, bidirectional=True)
        self.W_h = nn.Linear(2 * hid, 2 * hid, bias=False)
        self.reduce_h = nn.Linear(2 * hid, hid)
        self.reduce_c = nn.Linear(2 * hid, hid)
        self.decode_proj = nn.Linear(2 * hid, 2 * hid)
        self.W_c = nn.Linear(1, 2 * hid, bias=False)
        self.v = nn.Linear(2 * hid, 1, bias=False)
        self.x_context = nn.Linear(2 * hid + emb, emb)
        self.cell = nn.LSTMCell(emb, hid)
        self.p_gen_linear = nn.Linear(2 * hid + 2 * hid + emb, 1)
        self.out1 = nn.Linear(3 * hid, hid)
        self.out2 = nn.Linear(hid, vocab)
        self.hid, self.n_oov, self.cov_loss_wt, self.eps = hid, n_oov, cov_loss_wt, eps

    def forward(self, enc_batch, enc_extend, enc_mask, dec_batch, target, dec_mask):
        B, L = enc_batch.shape
        extra_zeros = torch.zeros((B, self.n_oov), dtype=enc_mask.dtype, device=enc_mask.device)
        enc_out, (h_n, c_n) = self.lstm(self.embedding(enc_batch))              # B, L, 2H
        enc_feature = self.W_h(enc_out)
        h = F.relu(self.reduce_h(h_n.transpose(0, 1).reshape(B, 2 * self.hid)))
        c = F.relu(self.reduce_c(c_n.transpose(0, 1).reshape(B, 2 * self.hid)))
        c_t = torch.zeros(B, 2 * self.hid, dtype=enc_out.dtype, device=enc_out.device)
        coverage = torch.zeros(B, L, dtype=enc_out.dtype, device=enc_out.device)
        step_losses = []
        for t in range(dec_batch.shape[1]):
            y_emb = self.embedding(dec_batch[:, t])
            x = self.x_context(torch.cat((c_t, y_emb), 1))
            h, c = self.cell(x, (h, c))
            s_t_hat = torch.cat((h, c), 1)
            att_features = enc_feature + self.decode_proj(s_t_hat).unsqueeze(1) + self.W_c(coverage.unsqueeze(-1))
            scores = self.v(torch.tanh(att_features)).squeeze(-1)
            attn_dist_ = F.softmax(scores, dim=1) * enc_mask
            attn_dist = attn_dist_ / attn_dist_.sum(1, keepdim=True)
            c_t = torch.bmm(attn_dist.unsqueeze(1), enc_out).squeeze(1)
            p_gen = torch.sigmoid(self.p_gen_linear(torch.cat((c_t, s_t_hat, x), 1)))
            vocab_dist = F.softmax(self.out2(self.out1(torch.cat((h, c_t), 1))), dim=1)
            vocab_dist_ = p_gen * vocab_dist
            attn_dist_ = (1 - p_gen) * attn_dist
            final_dist = torch.cat([vocab_dist_, extra_zeros], 1).scatter_add(1, enc_extend, attn_dist_)
            gold_probs = torch.gather(final_dist, 1, target[:, t].unsqueeze(1)).squeeze(1)
            step_loss = -torch.log(gold_probs + self.eps)
            step_loss = step_loss + self.cov_loss_wt * torch.sum(torch.min(attn_dist, coverage), 1)
            coverage = coverage + attn_dist
            step_losses.append(step_loss * dec_mask[:, t])
        dec_lens = dec_mask.sum(1)
        return torch.mean(torch.sum(torch.stack(step_losses, 1), 1) / dec_lens)


# ----------------------------------------------------------------------------- HiFi-GAN

wn = torch.nn.utils.parametrizations.weight_norm
LRELU_SLOPE = 0.1


class HiFiResBlock(nn.Module):
    def __init__(self, ch, k=3, dilation=(1, 3)):
        super().__init__()
        self.convs = nn.ModuleList(wn(nn.Conv1d(ch, ch, k, 1, dilation=d, padding=(k * d - d) // 2)) for d in dilation)

    def forward(self, x):
        for c in self.convs:
            x = x + c(F.leaky_relu(x, LRELU_SLOPE))
        return x


class HiFiGenerator(nn.Module):
    def __init__(self, mels=16, ch=32, rates=(8, 4, 4)):
        super().__init__()
        self.conv_pre = wn(nn.Conv1d(mels, ch, 7, 1, padding=3))
        self.ups = nn.ModuleList()
        self.resblocks = nn.ModuleList()
        for r in rates:
            self.ups.append(wn(nn.ConvTranspose1d(ch, ch // 2, 2 * r, r, padding=r // 2)))
            ch //= 2
            self.resblocks.append(nn.ModuleList([HiFiResBlock(ch, 3, (1, 3)), HiFiResBlock(ch, 5, (1, 3))]))
        self.conv_post = wn(nn.Conv1d(ch, 1, 7, 1, padding=3))

    def forward(self, x):
        x = self.conv_pre(x)
        for up, rbs in zip(self.ups, self.resblocks):
            x = up(F.leaky_relu(x, LRELU_SLOPE))
            xs = None
            for rb in rbs:
                xs = rb(x) if xs is None else xs + rb(x)
            x = xs / len(rbs)
        return torch.tanh(self.conv_post(F.leaky_relu(x)))


class DiscriminatorP(nn.Module):
    def __init__(self, period, chans=(8, 16, 32)):
        super().__init__()
        self.period = period
        convs, ci = [], 1
        for co in chans:
            convs.append(wn(nn.Conv2d(ci, co, (5, 1), (3, 1), padding=(2, 0))))
            ci = co
        convs.append(wn(nn.Conv2d(ci, ci, (5, 1), 1, padding=(2, 0))))
        self.convs = nn.ModuleList(convs)
        self.conv_post = wn(nn.Conv2d(ci, 1, (3, 1), 1, padding=(1, 0)))

    def forward(self, x):
        fmap = []
        b, c, t = x.shape
        if t % self.period != 0:
            n_pad = self.period - (t % self.period)
            x = F.pad(x, (0, n_pad), "reflect")
            t = t + n_pad
        x = x.view(b, c, t // self.period, self.period)
        for conv in self.convs:
            x = F.leaky_relu(conv(x), LRELU_SLOPE)
            fmap.append(x)
        x = self.conv_post(x)
        fmap.append(x)
        return torch.flatten(x, 1, -1), fmap


class DiscriminatorS(nn.Module):
    def __init__(self):
        super().__init__()
        self.convs = nn.ModuleList([
            wn(nn.Conv1d(1, 8, 15, 1, padding=7)),
            wn(nn.Conv1d(8, 32, 41, 4, groups=4, padding=20)),
            wn(nn.Conv1d(32, 64, 41, 4, groups=16, padding=20)),
            wn(nn.Conv1d(64, 64, 5, 1, padding=2)),
        ])
        self.conv_post = wn(nn.Conv1d(64, 1, 3, 1, padding=1))

    def forward(self, x):
        fmap = []
        for conv in self.convs:
            x = F.leaky_relu(conv(x), LRELU_SLOPE)
            fmap.append(x)
        x = self.conv_post(x)
        fmap.append(x)
        return torch.flatten(x, 1, -1), fmap


class MultiDiscriminator(nn.Module):
    def __init__(self, periods=(2, 3, 5), scales=2):
        super().__init__()
        self.period_discs = nn.ModuleList(DiscriminatorP(p) for p in periods)
        self.scale_discs = nn.ModuleList(DiscriminatorS() for _ in range(scales))
        self.meanpools = nn.ModuleList(nn.AvgPool1d(4, 2, padding=2) for _ in range(scales - 1))

    def forward(self, y, y_hat):
        y_d_rs, y_d_gs, fmap_rs, fmap_gs = [], [], [], []
        for d in self.period_discs:
            y_d_r, fmap_r = d(y)
            y_d_g, fmap_g = d(y_hat)
            y_d_rs.append(y_d_r)
            fmap_rs.append(fmap_r)
            y_d_gs.append(y_d_g)
            fmap_gs.append(fmap_g)
        for i, d in enumerate(self.scale_discs):
            if i != 0:
                y = self.meanpools[i - 1](y)
                y_hat = self.meanpools[i - 1](y_hat)
            y_d_r, fmap_r = d(y)
            y_d_g, fmap_g = d(y_hat)
            y_d_rs.append(y_d_r)
            fmap_rs.append(fmap_r)
            y_d_gs.append(y_d_g)
            fmap_gs.append(fmap_g)
        return y_d_rs, y_d_gs, fmap_rs, fmap_gs


def discriminator_loss(disc_real_outputs, disc_generated_outputs):
    loss = 0
    for dr, dg in zip(disc_real_outputs, disc_generated_outputs):
        loss = loss + torch.mean((1 - dr) ** 2) + torch.mean(dg ** 2)
    return loss


def generator_loss(disc_outputs):
    loss = 0
    for dg in disc_outputs:
        loss = loss + torch.mean((1 - dg) ** 2)
    return loss


def feature_loss(fmap_r, fmap_g):
    loss = 0
    for dr, dg in zip(fmap_r, fmap_g):
        for rl, gl in zip(dr, dg):
            loss = loss + torch.mean(torch.abs(rl - gl))
    return loss * 2


class HiFiGAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.generator = HiFiGenerator()
        self.mpd_msd = MultiDiscriminator()

    def forward(self, mel, y):
        y_g_hat = self.generator(mel)
        y_d_rs, y_d_gs, _, _ = self.mpd_msd(y, y_g_hat.detach())
        loss_disc = discriminator_loss(y_d_rs, y_d_gs)
        _, y_d_gs, fmap_rs, fmap_gs = self.mpd_msd(y, y_g_hat)
        loss_gen = generator_loss(y_d_gs) + feature_loss(fmap_rs, fmap_gs) + 45 * F.l1_loss(y_g_hat, y)
        return {"loss_disc": loss_disc, "loss_gen": loss_gen}


# ----------------------------------------------------------------------------- Slot Attention

def build_grid(resolution):
    ranges = [torch.linspace(0.0, 1.0, steps=r) for r in resolution]
    grid = torch.stack(torch.meshgrid(*ranges, indexing="ij"), dim=-1)
    grid = grid.reshape(resolution[0], resolution[1], -1).unsqueeze(0)
    return torch.cat([grid, 1.0 - grid], dim=-1)                                 # 1, H, W, 4


class SoftPositionEmbed(nn.Module):
    def __init__(self, hidden, resolution):
        super().__init__()
        self.embedding = nn.Linear(4, hidden, bias=True)
        self.register_buffer("grid", build_grid(resolution))

    def forward(self, inputs):                                                   # B, H, W, C
        return inputs + self.embedding(self.grid)


class SlotAttention(nn.Module):
    def __init__(self, num_slots, dim, iters=3, eps=1e-8, hidden_dim=64):
        super().__init__()
        self.num_slots, self.iters, self.eps = num_slots, iters, eps
        self.scale = dim ** -0.5
        self.slots_mu = nn.Parameter(torch.randn(1, 1, dim))
        self.slots_log_sigma = nn.Parameter(torch.zeros(1, 1, dim))
        nn.init.xavier_uniform_(self.slots_log_sigma)
        self.to_q = nn.Linear(dim, dim)
        self.to_k = nn.Linear(dim, dim)
        self.to_v = nn.Linear(dim, dim)
        self.gru = nn.GRUCell(dim, dim)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden_dim), nn.ReLU(inplace=True), nn.Linear(hidden_dim, dim))
        self.norm_input = nn.LayerNorm(dim)
        self.norm_slots = nn.LayerNorm(dim)
        self.norm_pre_ff = nn.LayerNorm(dim)

    def forward(self, inputs):
        b, n, d = inputs.shape
        mu = self.slots_mu.expand(b, self.num_slots, -1)
        sigma = self.slots_log_sigma.exp().expand(b, self.num_slots, -1)
        slots = mu + sigma * torch.randn(mu.shape, device=inputs.device, dtype=inputs.dtype)
        inputs = self.norm_input(inputs)
        k, v = self.to_k(inputs), self.to_v(inputs)
        for _ in range(self.iters):
            slots_prev = slots
            q = self.to_q(self.norm_slots(slots))
            dots = torch.einsum("bid,bjd->bij", q, k) * self.scale
            attn = dots.softmax(dim=1) + self.eps
            attn = attn / attn.sum(dim=-1, keepdim=True)
            updates = torch.einsum("bjd,bij->bid", v, attn)
            slots = self.gru(updates.reshape(-1, d), slots_prev.reshape(-1, d)).reshape(b, -1, d)
            slots = slots + self.mlp(self.norm_pre_ff(slots))
        return slots


class SlotAttentionAE(nn.Module):
    def __init__(self, resolution=(32, 32), num_slots=4, hid=32, iters=3):
        super().__init__()
        self.hid, self.num_slots = hid, num_slots
        self.dec_init = (resolution[0] // 4, resolution[1] // 4)
        self.encoder_cnn = nn.Sequential(*[m for i in range(4) for m in
                                           (nn.Conv2d(3 if i == 0 else hid, hid, 5, padding=2), nn.ReLU(inplace=True))])
        self.encoder_pos = SoftPositionEmbed(hid, resolution)
        self.decoder_pos = SoftPositionEmbed(hid, self.dec_init)
        self.mlp = nn.Sequential(nn.Linear(hid, hid), nn.ReLU(inplace=True), nn.Linear(hid, hid))
        self.norm = nn.LayerNorm(hid)
        self.slot_attention = SlotAttention(num_slots, hid, iters, hidden_dim=2 * hid)
        self.decoder = nn.Sequential(
            nn.ConvTranspose2d(hid, hid, 5, stride=2, padding=2, output_padding=1), nn.ReLU(inplace=True),
            nn.ConvTranspose2d(hid, hid, 5, stride=2, padding=2, output_padding=1), nn.ReLU(inplace=True),
            nn.ConvTranspose2d(hid, hid, 5, stride=1, padding=2), nn.ReLU(inplace=True),
            nn.ConvTranspose2d(hid, 4, 3, stride=1, padding=1))

    def forward(self, image):
        B = image.shape[0]
        x = self.encoder_cnn(image).permute(0, 2, 3, 1)                          # B, H, W, C
        x = self.encoder_pos(x)
        x = torch.flatten(x, 1, 2)
        x = self.mlp(self.norm(x))
        slots = self.slot_attention(x)
        x = slots.reshape((-1, slots.shape[-1])).unsqueeze(1).unsqueeze(2)
        x = x.repeat((1, self.dec_init[0], self.dec_init[1], 1))                # B*K, h, w, D
        x = self.decoder_pos(x).permute(0, 3, 1, 2)
        x = self.decoder(x)
        x = x.reshape(B, -1, x.shape[1], x.shape[2], x.shape[3])                # B, K, 4, H, W
        recons, masks = x.split([3, 1], dim=2)
        masks = F.softmax(masks, dim=1)
        recon_combined = torch.sum(recons * masks, dim=1)
        return F.mse_loss(recon_combined, image), masks.detach()


NAMES = ["relpos_conformer", "ft_transformer", "mtl_uncertainty", "glow", "superglue", "nbeats_revin", "ppo",
         "dgcnn", "cbam_sk", "pointer_gen", "hifigan", "slot_attention"]


def matching_gt(B, N, M, matched, g):
    """SuperGlue ground truth: gt0[b, i] in [0, M] (M = unmatched), gt1[b, j] in [0, N] (N = unmatched)."""
    gt0 = torch.full((B, N), M, dtype=torch.int64)
    gt1 = torch.full((B, M), N, dtype=torch.int64)
    for b in range(B):
        rows = torch.randperm(N, generator=g)[:matched]
        cols = torch.randperm(M, generator=g)[:matched]
        gt0[b, rows] = cols
        gt1[b, cols] = rows
    return gt0, gt1


def series(R, n, g, dtype):
    """Positive synthetic series: level + trend + a period-12 season + noise."""
    t = torch.arange(n, dtype=torch.float64)[None]
    level = 10 + 5 * torch.rand((R, 1), generator=g, dtype=torch.float64)
    slope = 0.05 * torch.randn((R, 1), generator=g, dtype=torch.float64)
    phase = 2 * math.pi * torch.rand((R, 1), generator=g, dtype=torch.float64)
    noise = 0.3 * torch.randn((R, n), generator=g, dtype=torch.float64)
    return (level + slope * t + 2 * torch.sin(2 * math.pi * t / 12 + phase) + noise).to(dtype)


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    third = max(16, (S // 3) // 16 * 16)    # 32 at the default --image 96
    if name == "relpos_conformer":
        T = 100
        lengths = T - torch.randint(0, 30, (B,), generator=g)
        lengths[0] = T
        return RelConformer(), [common.float_input((B, T, 40), dtype, g), lengths, common.token_ids((B,), 10, g)]
    if name == "ft_transformer":
        R, cards = 32 * B, (3, 7, 11, 5)
        x_cat = torch.stack([torch.randint(0, c, (R,), generator=g) for c in cards], 1)
        y_bin = (torch.rand((R,), generator=g, dtype=torch.float64) < 0.4).to(dtype)
        return FTTransformer(cards=cards), [common.float_input((R, 8), dtype, g), x_cat,
                                            common.float_input((R,), dtype, g), y_bin]
    if name == "mtl_uncertainty":
        side = max(16, S // 8 * 8)
        seg = torch.randint(0, 6, (B, side, side), generator=g)
        seg = torch.where(torch.rand((B, side, side), generator=g) < 0.05, torch.full_like(seg, 255), seg)
        depth = torch.exp(0.3 * torch.randn((B, 1, side, side), generator=g, dtype=torch.float64))
        depth = depth * (torch.rand((B, 1, side, side), generator=g, dtype=torch.float64) > 0.1)
        normal = F.normalize(torch.randn((B, 3, side, side), generator=g, dtype=torch.float64), dim=1)
        return MTLUncertainty(), [common.float_input((B, 3, side, side), dtype, g), seg, depth.to(dtype),
                                  normal.to(dtype)]
    if name == "glow":
        side = max(16, (S // 2) // 8 * 8)
        image = torch.rand((B, 3, side, side), generator=g, dtype=torch.float64).to(dtype)
        model = Glow()
        with torch.no_grad():               # ActNorm's data-dependent init on a warm-up batch
            model(image.float())            # (the model is cast to --dtype after build)
        return model, [image]
    if name == "superglue":
        N = M = 64
        D = 64

        def kpts():
            return (torch.rand((B, N, 2), generator=g, dtype=torch.float64) *
                    torch.tensor([640.0, 480.0], dtype=torch.float64)).to(dtype)

        def scores():
            return torch.rand((B, N), generator=g, dtype=torch.float64).to(dtype)
        k0, s0, d0 = kpts(), scores(), F.normalize(common.float_input((B, D, N), dtype, g), dim=1)
        k1, s1, d1 = kpts(), scores(), F.normalize(common.float_input((B, D, M), dtype, g), dim=1)
        gt0, gt1 = matching_gt(B, N, M, 40, g)
        return SuperGlue(d=D), [k0, s0, d0, k1, s1, d1, gt0, gt1]
    if name == "nbeats_revin":
        R, L, H = 16 * B, 96, 24
        full = series(R, L + H, g, dtype)
        x_mask = (torch.rand((R, L), generator=g, dtype=torch.float64) > 0.05).to(dtype)
        y_mask = torch.ones((R, H), dtype=dtype)
        y_mask[:, -3:] = (torch.rand((R, 3), generator=g, dtype=torch.float64) > 0.5).to(dtype)
        return NBeats(L, H), [full[:, :L] * x_mask, x_mask, full[:, L:].contiguous(), y_mask]
    if name == "ppo":
        T, N = 32, 16 * B
        obs = common.float_input((T, N, 8), dtype, g)
        next_obs = common.float_input((N, 8), dtype, g)
        actions_d = torch.randint(0, 4, (T, N), generator=g)
        actions_c = common.float_input((T, N, 2), dtype, g)
        logprobs = (-1.4 - 1.8 + 0.1 * torch.randn((T, N), generator=g, dtype=torch.float64)).to(dtype)
        rewards = common.float_input((T, N), dtype, g)
        dones = (torch.rand((T, N), generator=g, dtype=torch.float64) < 0.05).to(dtype)
        next_done = (torch.rand((N,), generator=g, dtype=torch.float64) < 0.05).to(dtype)
        values = (0.5 * torch.randn((T, N), generator=g, dtype=torch.float64)).to(dtype)
        return PPOAgent(T, T * N // 2), [obs, next_obs, actions_d, actions_c, logprobs, rewards, dones, next_done, values]
    if name == "dgcnn":
        pts = common.float_input((B, 3, 256), dtype, g)
        return DGCNN(), [pts, common.token_ids((B,), 10, g)]
    if name == "cbam_sk":
        side = max(32, S // 16 * 16)
        return CBAMSKNet(), [common.float_input((B, 3, side, side), dtype, g), common.token_ids((B,), 10, g)]
    if name == "pointer_gen":
        Bp, L, Td, V, n_oov = 4 * B, 40, 12, 1000, 8
        ext = torch.randint(0, V + n_oov, (Bp, L), generator=g)
        ext[:, :2] = torch.randint(V, V + n_oov, (Bp, 2), generator=g)    # every article has OOV words
        enc = torch.where(ext >= V, torch.ones_like(ext), ext)              # OOV -> UNK (id 1)
        enc_len = L - torch.randint(0, 12, (Bp,), generator=g)
        enc_len[0] = L
        enc_mask = (torch.arange(L)[None] < enc_len[:, None]).to(dtype)
        target = torch.where(torch.rand((Bp, Td), generator=g) < 0.3,
                             ext.gather(1, torch.randint(0, 20, (Bp, Td), generator=g)),
                             torch.randint(4, V, (Bp, Td), generator=g))
        dec_in = torch.cat([torch.full((Bp, 1), 2, dtype=torch.int64),
                            torch.where(target[:, :-1] >= V, torch.ones_like(target[:, :-1]), target[:, :-1])], 1)
        dec_len = Td - torch.randint(0, 4, (Bp,), generator=g)
        dec_mask = (torch.arange(Td)[None] < dec_len[:, None]).to(dtype)
        return PointerGenerator(vocab=V, n_oov=n_oov), [enc, ext, enc_mask, dec_in, target, dec_mask]
    if name == "hifigan":
        frames = 16                         # hop 128: 2048 samples
        mel = common.float_input((B, 16, frames), dtype, g)
        wav = (0.5 * torch.tanh(torch.randn((B, 1, frames * 128), generator=g, dtype=torch.float64))).to(dtype)
        return HiFiGAN(), [mel, wav]
    if name == "slot_attention":
        return SlotAttentionAE(resolution=(third, third)), [
            torch.sigmoid(common.float_input((B, 3, third, third), dtype, g))]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen10.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
