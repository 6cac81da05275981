#!/usr/bin/env python3
"""unseen15.py — a fifteenth set of models nobody tuned rkmate for
(after tools/models/unseen.py ... unseen14.py), all small and written as users
of torch 2.x write them today.  Most are deep (six or more blocks in
sequence) and read a model input after their first block: a padding mask
read by every layer, a timestep read by every block, an alignment matrix read
half-way, or labels read by the loss.  Each has idioms the other sets do not:

A SASRec sequential recommender (pmixer's SASRec.pytorch): item embeddings
scaled by sqrt(d) plus a position embedding, a timeline mask (a bool padding
input) multiplied into the sequence before the stack and after every block
(seqs * ~pad.unsqueeze(-1)), nn.MultiheadAttention on (T, B, C) transposes
with a causal bool attn_mask buffer and the LayerNorm-ed query only
(Q = ln(seqs); seqs = Q + mha(Q, seqs, seqs)), a point-wise feed-forward of
two Conv1d(k=1) on transposed activations, and the BCE-with-logits of the
positive and sampled negative items (scored by the item embedding, pos / neg
id inputs read only by the loss) averaged over the non-padded positions by a
float mask instead of np.where.

A Gemma-2 style decoder: the embedding multiplied by a normalizer
torch.tensor(d ** 0.5, dtype=x.dtype), RMSNorm with (1 + weight), sandwich
norms (pre- and post-attention, pre- and post-feed-forward), grouped-query
attention by repeat_interleave of the key / value heads, attention-logit
soft-capping tanh(s / 50) * 50, layers alternating a sliding-window (local)
and a global causal mask, both built in every layer from the same
attention_mask input (padding) with torch.tril / torch.triu and
masked_fill(finfo.min), GeGLU with F.gelu(approximate="tanh"), a final logit
soft-capping and a cross-entropy with ignore_index=-100 on a labels input.

A conditional flow-matching (rectified flow) vector-field net: x_t = (1 - t)
x0 + t x1 and the target velocity x1 - x0 made in the forward from the noise,
data and time inputs; a deep residual MLP whose every block re-embeds the raw
time input itself (sinusoidal features of t[:, None] * freqs buffer, Linear,
SiLU) and a class label dropped for classifier-free guidance by a drop-mask
input (torch.where(drop, null_id, y)), scale-shift conditioning
h * (1 + s) + b, a small-initialised output layer and an MSE to the velocity.

An ECAPA-TDNN speaker classifier (SpeechBrain): Conv1d + ReLU + BatchNorm1d,
SE-Res2Net blocks (torch.chunk of the channels into scales, each scale's
dilated conv fed by the previous scale's output plus its own chunk, cat),
squeeze-excitation over lengths-masked means, multi-layer feature aggregation
(cat of every block's output), attentive statistics pooling with global
context (masked mean and std cat-ed and expanded over time, a tanh attention
with masked_fill(-inf) at padded frames, softmax over time, weighted mean and
sqrt((w * x^2).sum - mean^2).clamp(min=eps)), BatchNorm1d, an embedding Linear
and an additive-margin (CosFace) softmax by F.one_hot of the labels.

An E-Branchformer encoder (ESPnet): macaron half-step feed-forwards,
a global branch (MHSA with the padding mask read by every layer) in parallel
with a local cgMLP branch (a Linear to 2C, GELU, the convolutional spatial
gating unit: chunk(2), LayerNorm, a depthwise Conv1d along time on the gate,
x_r * x_g), the merge by cat of both branches, a depthwise Conv1d over the
cat added to it, a Linear back to C, a final LayerNorm per layer, padded
frames zeroed by masked_fill in every layer, and frame-level phone
cross-entropy with ignore_index=-100.

An NF-ResNet (timm's normalizer-free nets): ScaledStdConv2d (the weight
standardised in every forward by F.batch_norm(weight.reshape(1, out, -1),
None, None, weight=(gain * scale).view(-1), training=True, momentum=0.)),
gamma-scaled activations (F.gelu(x) * 1.7015), the alpha / beta residual
scaling with an expected-variance schedule (x * beta is the block input,
out * alpha + shortcut), a SkipInit gain parameter, no normalisation layer,
and a cross-entropy with label_smoothing on labels read only by the loss.

A DCN-v2 (deep & cross network v2) click-through-rate model: per-field
nn.Embedding tables looked up from columns of one int64 input and cat-ed with
log1p-transformed dense features, six full-rank cross layers
x0 * (W x_l + b) + x_l (x0 read by every cross layer), a parallel deep MLP
with BatchNorm1d, the stacked-and-parallel outputs cat-ed, and a
BCE-with-logits on a float click input.

A Griffin / Hawk recurrent LM (RG-LRU): residual blocks of RMSNorm, a GeLU
gate branch and a branch of a causal depthwise Conv1d (F.pad left by k - 1)
followed by the real-gated linear recurrent unit (recurrence and input gates
by sigmoid, log a = -8 * r * softplus(Lambda), a = exp(log a), the
normalised input sqrt(1 - a^2) * (i * x), h_t = a_t * h_{t-1} + b_t unrolled
over time with torch.stack), a GeGLU MLP block, and a next-token
cross-entropy on a targets input.

An ELMo-style character CNN tagger: character ids (B, T, W) embedded and
reshaped to (B * T, C, W), several Conv1d widths each max-pooled over the
characters by torch.max(dim=-1).values and tanh-ed, cat-ed, eight highway
layers (t = sigmoid(W_t x), t * relu(W_h x) + (1 - t) * x), a projection, a
bidirectional nn.LSTM and a tag cross-entropy with ignore_index on padded
words.

A FastSpeech 2 style acoustic model with conditional layer norms (AdaSpeech):
phoneme embeddings plus a sinusoidal table buffer, FFT blocks (self-attention
with a key padding mask and a Conv1d(k=9) feed-forward) whose LayerNorms take
their scale and bias from a speaker embedding (a speaker id input) and whose
outputs are masked_fill-ed at padded positions in every layer, a duration
predictor with an MSE on log durations (an input read by the loss), the
length regulator as torch.bmm of a hard alignment matrix input (mel frames
x phonemes, read half-way through the model), decoder FFT blocks reading
the mel padding mask in every layer, a mel Linear, and an L1 mel loss
masked by that mask.

Exported like the zoo (tools/models/common.export), with the zoo's options,
so that `tools/bench/zoo.py --models-script tools/models/unseen15.py` runs
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


# ----------------------------------------------------------------------------- SASRec

class PointWiseFeedForward(nn.Module):
    def __init__(self, d, p):
        super().__init__()
        self.conv1 = nn.Conv1d(d, d, kernel_size=1)
        self.dropout1 = nn.Dropout(p)
        self.conv2 = nn.Conv1d(d, d, kernel_size=1)
        self.dropout2 = nn.Dropout(p)

    def forward(self, x):
        out = self.dropout2(self.conv2(F.relu(self.dropout1(self.conv1(x.transpose(-1, -2))))))
        return out.transpose(-1, -2) + x


class SASRec(nn.Module):
    def __init__(self, items=1000, d=64, heads=2, blocks=6, maxlen=50, p=0.2):
        super().__init__()
        self.d = d
        self.item_emb = nn.Embedding(items + 1, d, padding_idx=0)
        self.pos_emb = nn.Embedding(maxlen, d)
        self.emb_dropout = nn.Dropout(p)
        self.attn_ln = nn.ModuleList([nn.LayerNorm(d, eps=1e-8) for _ in range(blocks)])
        self.attn = nn.ModuleList([nn.MultiheadAttention(d, heads, dropout=p) for _ in range(blocks)])
        self.fwd_ln = nn.ModuleList([nn.LayerNorm(d, eps=1e-8) for _ in range(blocks)])
        self.fwd = nn.ModuleList([PointWiseFeedForward(d, p) for _ in range(blocks)])
        self.last_ln = nn.LayerNorm(d, eps=1e-8)
        self.register_buffer("causal", ~torch.tril(torch.ones(maxlen, maxlen, dtype=torch.bool)), persistent=False)

    def log2feats(self, log_seqs, pad):
        T = log_seqs.shape[1]
        seqs = self.item_emb(log_seqs) * self.d ** 0.5
        seqs = seqs + self.pos_emb(torch.arange(T, device=log_seqs.device))[None]
        seqs = self.emb_dropout(seqs)
        keep = (~pad).unsqueeze(-1).to(seqs.dtype)
        seqs = seqs * keep
        mask = self.causal[:T, :T]
        for ln, attn, fln, fwd in zip(self.attn_ln, self.attn, self.fwd_ln, self.fwd):
            seqs = seqs.transpose(0, 1)
            Q = ln(seqs)
            out, _ = attn(Q, seqs, seqs, attn_mask=mask, need_weights=False)
            seqs = (Q + out).transpose(0, 1)
            seqs = fwd(fln(seqs))
            seqs = seqs * (~pad).unsqueeze(-1).to(seqs.dtype)
        return self.last_ln(seqs)

    def forward(self, log_seqs, pad, pos_seqs, neg_seqs):
        feats = self.log2feats(log_seqs, pad)
        pos_logits = (feats * self.item_emb(pos_seqs)).sum(-1)
        neg_logits = (feats * self.item_emb(neg_seqs)).sum(-1)
        valid = (pos_seqs != 0).to(feats.dtype)
        loss = (F.binary_cross_entropy_with_logits(pos_logits, torch.ones_like(pos_logits), reduction="none")
                + F.binary_cross_entropy_with_logits(neg_logits, torch.zeros_like(neg_logits), reduction="none"))
        return (loss * valid).sum() / valid.sum()


# ----------------------------------------------------------------------------- Gemma-2 style

class GemmaRMSNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.zeros(d))

    def forward(self, x):
        out = x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps)
        return (out * (1.0 + self.weight.float())).type_as(x)


class Gemma2Layer(nn.Module):
    def __init__(self, d, heads, kv_heads, hd, hidden, sliding, window, softcap=50.0):
        super().__init__()
        self.h, self.kv, self.hd, self.sliding, self.window, self.softcap = heads, kv_heads, hd, sliding, window, softcap
        self.input_layernorm = GemmaRMSNorm(d)
        self.post_attention_layernorm = GemmaRMSNorm(d)
        self.pre_feedforward_layernorm = GemmaRMSNorm(d)
        self.post_feedforward_layernorm = GemmaRMSNorm(d)
        self.q_proj = nn.Linear(d, heads * hd, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * hd, bias=False)
        self.o_proj = nn.Linear(heads * hd, d, bias=False)
        self.gate_proj = nn.Linear(d, hidden, bias=False)
        self.up_proj = nn.Linear(d, hidden, bias=False)
        self.down_proj = nn.Linear(hidden, d, bias=False)

    def mask(self, attention_mask, T, dtype):
        ones = torch.ones(T, T, dtype=torch.bool, device=attention_mask.device)
        allowed = torch.tril(ones)
        if self.sliding:
            allowed = allowed & torch.triu(ones, diagonal=-self.window + 1)
        allowed = allowed[None, None] & attention_mask[:, None, None, :].bool()
        return torch.zeros(allowed.shape, dtype=dtype, device=allowed.device).masked_fill(
            ~allowed, torch.finfo(dtype).min)

    def forward(self, x, attention_mask):
        B, T, _ = x.shape
        r = x
        x = self.input_layernorm(x)
        q = self.q_proj(x).view(B, T, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.kv, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.kv, self.hd).transpose(1, 2)
        k = k.repeat_interleave(self.h // self.kv, dim=1)
        v = v.repeat_interleave(self.h // self.kv, dim=1)
        s = torch.matmul(q, k.transpose(2, 3)) * self.hd ** -0.5
        s = torch.tanh(s / self.softcap) * self.softcap
        s = s + self.mask(attention_mask, T, s.dtype)
        a = torch.matmul(F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype), v)
        a = self.o_proj(a.transpose(1, 2).reshape(B, T, -1))
        x = r + self.post_attention_layernorm(a)
        r = x
        x = self.pre_feedforward_layernorm(x)
        x = self.down_proj(F.gelu(self.gate_proj(x), approximate="tanh") * self.up_proj(x))
        return r + self.post_feedforward_layernorm(x)


class Gemma2LM(nn.Module):
    def __init__(self, vocab=512, d=96, heads=4, kv_heads=2, hd=24, hidden=256, layers=6, window=16):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab, d)
        nn.init.normal_(self.embed_tokens.weight, std=0.02)
        self.layers = nn.ModuleList([Gemma2Layer(d, heads, kv_heads, hd, hidden, i % 2 == 0, window)
                                     for i in range(layers)])
        self.norm = GemmaRMSNorm(d)
        self.final_softcap = 30.0

    def forward(self, input_ids, attention_mask, labels):
        x = self.embed_tokens(input_ids)
        x = x * torch.tensor(x.shape[-1] ** 0.5, dtype=x.dtype)
        for layer in self.layers:
            x = layer(x, attention_mask)
        logits = F.linear(self.norm(x), self.embed_tokens.weight)
        logits = torch.tanh(logits / self.final_softcap) * self.final_softcap
        logits = logits[:, :-1].float()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels[:, 1:].reshape(-1), ignore_index=-100)


# ----------------------------------------------------------------------------- flow matching

def timestep_features(t, freqs):
    args = t[:, None] * freqs[None]
    return torch.cat([torch.cos(args), torch.sin(args)], dim=-1)


class FMBlock(nn.Module):
    def __init__(self, d, tdim):
        super().__init__()
        self.register_buffer("freqs", torch.exp(-math.log(10000.0) * torch.arange(tdim // 2) / (tdim // 2)) * 1000.0,
                             persistent=False)
        self.t_mlp = nn.Sequential(nn.Linear(tdim, d), nn.SiLU(), nn.Linear(d, 2 * d))
        self.norm = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 2 * d)
        self.fc2 = nn.Linear(2 * d, d)

    def forward(self, h, t, c):
        s, b = (self.t_mlp(timestep_features(t, self.freqs.to(h.dtype))) + c).chunk(2, dim=-1)
        y = self.norm(h) * (1 + s) + b
        return h + self.fc2(F.silu(self.fc1(y)))


class FlowMatchingMLP(nn.Module):
    def __init__(self, dim=64, d=192, blocks=8, classes=10, tdim=64):
        super().__init__()
        self.classes = classes
        self.inp = nn.Linear(dim, d)
        self.y_emb = nn.Embedding(classes + 1, 2 * d)
        self.blocks = nn.ModuleList([FMBlock(d, tdim) for _ in range(blocks)])
        self.out_norm = nn.LayerNorm(d)
        self.out = nn.Linear(d, dim)
        nn.init.normal_(self.out.weight, std=0.02)
        nn.init.zeros_(self.out.bias)

    def forward(self, x1, x0, t, y, drop):
        tt = t[:, None]
        xt = (1 - tt) * x0 + tt * x1
        y = torch.where(drop, torch.full_like(y, self.classes), y)
        c = self.y_emb(y)
        h = self.inp(xt)
        for blk in self.blocks:
            h = blk(h, t, c)
        v = self.out(self.out_norm(h))
        return F.mse_loss(v, x1 - x0)


# ----------------------------------------------------------------------------- ECAPA-TDNN

class TDNNBlock(nn.Module):
    def __init__(self, cin, cout, k, dil):
        super().__init__()
        self.conv = nn.Conv1d(cin, cout, k, dilation=dil, padding=dil * (k - 1) // 2)
        self.norm = nn.BatchNorm1d(cout)

    def forward(self, x):
        return self.norm(F.relu(self.conv(x)))


class Res2NetBlock(nn.Module):
    def __init__(self, c, scale, k, dil):
        super().__init__()
        self.scale = scale
        self.blocks = nn.ModuleList([TDNNBlock(c // scale, c // scale, k, dil) for _ in range(scale - 1)])

    def forward(self, x):
        ys = []
        y_i = None
        for i, x_i in enumerate(torch.chunk(x, self.scale, dim=1)):
            if i == 0:
                y_i = x_i
            elif i == 1:
                y_i = self.blocks[i - 1](x_i)
            else:
                y_i = self.blocks[i - 1](x_i + y_i)
            ys.append(y_i)
        return torch.cat(ys, dim=1)


class SEBlock1d(nn.Module):
    def __init__(self, c, se):
        super().__init__()
        self.conv1 = nn.Conv1d(c, se, 1)
        self.conv2 = nn.Conv1d(se, c, 1)

    def forward(self, x, keep):
        s = (x * keep).sum(dim=2, keepdim=True) / keep.sum(dim=2, keepdim=True)
        return torch.sigmoid(self.conv2(F.relu(self.conv1(s)))) * x


class SERes2NetBlock(nn.Module):
    def __init__(self, c, k, dil, scale=4, se=32):
        super().__init__()
        self.tdnn1 = TDNNBlock(c, c, 1, 1)
        self.res2net = Res2NetBlock(c, scale, k, dil)
        self.tdnn2 = TDNNBlock(c, c, 1, 1)
        self.se = SEBlock1d(c, se)

    def forward(self, x, keep):
        return self.se(self.tdnn2(self.res2net(self.tdnn1(x))), keep) + x


class AttentiveStatisticsPooling(nn.Module):
    def __init__(self, c, att=64, eps=1e-12):
        super().__init__()
        self.eps = eps
        self.tdnn = TDNNBlock(3 * c, att, 1, 1)
        self.conv = nn.Conv1d(att, c, 1)

    @staticmethod
    def stats(x, w, eps):
        mean = (w * x).sum(2)
        std = torch.sqrt(((w * (x - mean.unsqueeze(2)).pow(2)).sum(2)).clamp(eps))
        return mean, std

    def forward(self, x, pad):
        T = x.shape[-1]
        keep = (~pad).unsqueeze(1).to(x.dtype)
        mean, std = self.stats(x, keep / keep.sum(2, keepdim=True), self.eps)
        ctx = torch.cat([x, mean.unsqueeze(2).repeat(1, 1, T), std.unsqueeze(2).repeat(1, 1, T)], dim=1)
        attn = self.conv(torch.tanh(self.tdnn(ctx)))
        attn = attn.masked_fill(pad.unsqueeze(1), float("-inf"))
        attn = F.softmax(attn, dim=2)
        mean, std = self.stats(x, attn, self.eps)
        return torch.cat((mean, std), dim=1).unsqueeze(2)


class ECAPATDNN(nn.Module):
    def __init__(self, n_mels=40, c=128, blocks=6, emb=96, speakers=50, margin=0.2, s=30.0):
        super().__init__()
        self.margin, self.s = margin, s
        self.block0 = TDNNBlock(n_mels, c, 5, 1)
        self.blocks = nn.ModuleList([SERes2NetBlock(c, 3, 2 + i % 3) for i in range(blocks)])
        self.mfa = TDNNBlock(c * blocks, 3 * c, 1, 1)
        self.asp = AttentiveStatisticsPooling(3 * c)
        self.asp_bn = nn.BatchNorm1d(6 * c)
        self.fc = nn.Conv1d(6 * c, emb, 1)
        self.weight = nn.Parameter(torch.empty(speakers, emb))
        nn.init.xavier_uniform_(self.weight)

    def forward(self, feats, pad, labels):
        x = self.block0(feats.transpose(1, 2))
        keep = (~pad).unsqueeze(1).to(x.dtype)
        xl = []
        for blk in self.blocks:
            x = blk(x, keep)
            xl.append(x)
        x = self.mfa(torch.cat(xl, dim=1))
        x = self.fc(self.asp_bn(self.asp(x, pad))).squeeze(2)
        cosine = F.linear(F.normalize(x), F.normalize(self.weight))
        one_hot = F.one_hot(labels, cosine.shape[1]).to(cosine.dtype)
        return F.cross_entropy(self.s * (cosine - self.margin * one_hot), labels)


# ----------------------------------------------------------------------------- E-Branchformer

class ConvolutionalSpatialGatingUnit(nn.Module):
    def __init__(self, c, k):
        super().__init__()
        self.norm = nn.LayerNorm(c // 2)
        self.conv = nn.Conv1d(c // 2, c // 2, k, padding=(k - 1) // 2, groups=c // 2)

    def forward(self, x):
        x_r, x_g = x.chunk(2, dim=-1)
        x_g = self.conv(self.norm(x_g).transpose(1, 2)).transpose(1, 2)
        return x_r * x_g


class EBranchformerLayer(nn.Module):
    def __init__(self, d, heads, cg, k, merge_k, p=0.1):
        super().__init__()
        self.ff1_norm, self.ff2_norm = nn.LayerNorm(d), nn.LayerNorm(d)
        self.ff1 = nn.Sequential(nn.Linear(d, 4 * d), nn.SiLU(), nn.Dropout(p), nn.Linear(4 * d, d))
        self.ff2 = nn.Sequential(nn.Linear(d, 4 * d), nn.SiLU(), nn.Dropout(p), nn.Linear(4 * d, d))
        self.mha_norm = nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, dropout=p, batch_first=True)
        self.mlp_norm = nn.LayerNorm(d)
        self.cg_in = nn.Linear(d, cg)
        self.csgu = ConvolutionalSpatialGatingUnit(cg, k)
        self.cg_out = nn.Linear(cg // 2, d)
        self.depthwise = nn.Conv1d(2 * d, 2 * d, merge_k, padding=(merge_k - 1) // 2, groups=2 * d)
        self.merge = nn.Linear(2 * d, d)
        self.final = nn.LayerNorm(d)
        self.drop = nn.Dropout(p)

    def forward(self, x, pad):
        x = x + 0.5 * self.drop(self.ff1(self.ff1_norm(x)))
        a = self.mha_norm(x)
        x1, _ = self.attn(a, a, a, key_padding_mask=pad, need_weights=False)
        x2 = self.cg_out(self.drop(self.csgu(F.gelu(self.cg_in(self.mlp_norm(x))))))
        cat = torch.cat([x1, x2], dim=-1)
        cat = cat + self.depthwise(cat.transpose(1, 2)).transpose(1, 2)
        x = x + self.drop(self.merge(cat))
        x = x + 0.5 * self.drop(self.ff2(self.ff2_norm(x)))
        return self.final(x).masked_fill(pad.unsqueeze(-1), 0.0)


class EBranchformer(nn.Module):
    def __init__(self, n_mels=40, d=96, heads=4, layers=6, phones=48):
        super().__init__()
        self.embed = nn.Sequential(nn.Linear(n_mels, d), nn.LayerNorm(d), nn.Dropout(0.1))
        self.layers = nn.ModuleList([EBranchformerLayer(d, heads, 4 * d, 15, 3) for _ in range(layers)])
        self.head = nn.Linear(d, phones)

    def forward(self, feats, pad, targets):
        x = self.embed(feats) * math.sqrt(self.embed[0].out_features)
        for layer in self.layers:
            x = layer(x, pad)
        logits = self.head(x)
        return F.cross_entropy(logits.transpose(1, 2), targets, ignore_index=-100)


# ----------------------------------------------------------------------------- NF-ResNet

class ScaledStdConv2d(nn.Conv2d):
    def __init__(self, cin, cout, k, stride=1, padding=None, gamma=1.0, eps=1e-6, bias=True):
        padding = k // 2 if padding is None else padding
        super().__init__(cin, cout, k, stride, padding, bias=bias)
        self.gain = nn.Parameter(torch.full((cout, 1, 1, 1), 1.0))
        self.scale = gamma * self.weight[0].numel() ** -0.5
        self.eps = eps

    def forward(self, x):
        weight = F.batch_norm(self.weight.reshape(1, self.out_channels, -1), None, None,
                              weight=(self.gain * self.scale).view(-1), training=True, momentum=0.,
                              eps=self.eps).reshape_as(self.weight)
        return F.conv2d(x, weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class GammaAct(nn.Module):
    def forward(self, x):
        return F.gelu(x) * 1.7015043497085571


class NormFreeBlock(nn.Module):
    def __init__(self, cin, cout, stride, alpha, beta):
        super().__init__()
        self.alpha, self.beta = alpha, beta
        mid = cout // 2
        self.act1 = GammaAct()
        self.downsample = ScaledStdConv2d(cin, cout, 1, stride) if stride != 1 or cin != cout else None
        self.conv1 = ScaledStdConv2d(cin, mid, 1)
        self.act2 = GammaAct()
        self.conv2 = ScaledStdConv2d(mid, mid, 3, stride)
        self.act3 = GammaAct()
        self.conv3 = ScaledStdConv2d(mid, cout, 1)
        self.skipinit_gain = nn.Parameter(torch.tensor(0.2))

    def forward(self, x):
        out = self.act1(x) * self.beta
        shortcut = x if self.downsample is None else self.downsample(out)
        out = self.conv3(self.act3(self.conv2(self.act2(self.conv1(out)))))
        return out * (self.alpha * self.skipinit_gain) + shortcut


class NFResNet(nn.Module):
    def __init__(self, classes=10, w=32, alpha=0.2):
        super().__init__()
        self.stem = nn.Sequential(ScaledStdConv2d(3, w, 3, 2), GammaAct(), ScaledStdConv2d(w, w, 3, 1))
        cfg = [(w, 2 * w, 1), (2 * w, 2 * w, 1), (2 * w, 4 * w, 2), (4 * w, 4 * w, 1), (4 * w, 4 * w, 1),
               (4 * w, 8 * w, 2), (8 * w, 8 * w, 1), (8 * w, 8 * w, 1)]
        blocks, expected_var = [], 1.0
        for cin, cout, s in cfg:
            if s != 1 or cin != cout:
                expected_var = 1.0
            blocks.append(NormFreeBlock(cin, cout, s, alpha, 1.0 / expected_var ** 0.5))
            expected_var += alpha ** 2
        self.blocks = nn.Sequential(*blocks)
        self.final_conv = ScaledStdConv2d(8 * w, 16 * w, 1)
        self.final_act = GammaAct()
        self.fc = nn.Linear(16 * w, classes)

    def forward(self, x, labels):
        x = self.final_act(self.final_conv(self.blocks(self.stem(x))))
        x = F.dropout(x.mean((2, 3)), 0.2, self.training)
        return F.cross_entropy(self.fc(x), labels, label_smoothing=0.1)


# ----------------------------------------------------------------------------- DCN-v2

class DCNv2(nn.Module):
    def __init__(self, cards=(100, 50, 20, 200, 30, 10, 60, 40), dense=13, e=16, cross=6, deep=(256, 128)):
        super().__init__()
        self.embs = nn.ModuleList([nn.Embedding(c, e) for c in cards])
        d0 = len(cards) * e + dense
        self.cross_w = nn.ModuleList([nn.Linear(d0, d0) for _ in range(cross)])
        layers, d = [], d0
        for h in deep:
            layers += [nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(0.1)]
            d = h
        self.deep = nn.Sequential(*layers)
        self.out = nn.Linear(d0 + d, 1)

    def forward(self, sparse, dense, clicks):
        emb = [m(sparse[:, i]) for i, m in enumerate(self.embs)]
        x0 = torch.cat(emb + [torch.log1p(dense)], dim=1)
        xl = x0
        for w in self.cross_w:
            xl = x0 * w(xl) + xl
        logit = self.out(torch.cat([xl, self.deep(x0)], dim=1)).squeeze(1)
        return F.binary_cross_entropy_with_logits(logit, clicks)


# ----------------------------------------------------------------------------- Griffin RG-LRU

class RGLRU(nn.Module):
    def __init__(self, d, c=8.0):
        super().__init__()
        self.c = c
        self.input_gate = nn.Linear(d, d)
        self.a_gate = nn.Linear(d, d)
        self.a_param = nn.Parameter(torch.empty(d).uniform_(0.9 ** 2, 0.999 ** 2).log().mul(0.5).neg().expm1().log())

    def forward(self, x):
        gate_x = torch.sigmoid(self.input_gate(x))
        gate_a = torch.sigmoid(self.a_gate(x))
        log_a = -self.c * gate_a * F.softplus(self.a_param)
        a = torch.exp(log_a)
        multiplier = torch.sqrt(1 - torch.exp(2 * log_a))
        b = x * gate_x * multiplier
        h = torch.zeros_like(b[:, 0])
        ys = []
        for t in range(x.shape[1]):
            h = a[:, t] * h + b[:, t]
            ys.append(h)
        return torch.stack(ys, dim=1)


class RecurrentBlock(nn.Module):
    def __init__(self, d, w, k=4):
        super().__init__()
        self.k = k
        self.linear_y = nn.Linear(d, w)
        self.linear_x = nn.Linear(d, w)
        self.conv1d = nn.Conv1d(w, w, k, groups=w)
        self.rg_lru = RGLRU(w)
        self.linear_out = nn.Linear(w, d)

    def forward(self, x):
        y = F.gelu(self.linear_y(x), approximate="tanh")
        x = self.linear_x(x).transpose(1, 2)
        x = self.conv1d(F.pad(x, (self.k - 1, 0))).transpose(1, 2)
        return self.linear_out(self.rg_lru(x) * y)


class GriffinResidual(nn.Module):
    def __init__(self, d, w, hidden):
        super().__init__()
        self.n1 = nn.RMSNorm(d, eps=1e-6)
        self.rec = RecurrentBlock(d, w)
        self.n2 = nn.RMSNorm(d, eps=1e-6)
        self.ffw_up = nn.Linear(d, 2 * hidden)
        self.ffw_down = nn.Linear(hidden, d)

    def forward(self, x):
        x = x + self.rec(self.n1(x))
        g, u = self.ffw_up(self.n2(x)).chunk(2, dim=-1)
        return x + self.ffw_down(F.gelu(g, approximate="tanh") * u)


class HawkLM(nn.Module):
    def __init__(self, vocab=256, d=64, w=64, hidden=128, layers=6):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        nn.init.normal_(self.embed.weight, std=d ** -0.5)
        self.blocks = nn.ModuleList([GriffinResidual(d, w, hidden) for _ in range(layers)])
        self.norm = nn.RMSNorm(d, eps=1e-6)

    def forward(self, tokens, targets):
        x = self.embed(tokens) * math.sqrt(self.embed.embedding_dim)
        for b in self.blocks:
            x = b(x)
        logits = F.linear(self.norm(x), self.embed.weight)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


# ----------------------------------------------------------------------------- char-CNN highway tagger

class Highway(nn.Module):
    def __init__(self, d):
        super().__init__()
        self.proj = nn.Linear(d, 2 * d)
        nn.init.constant_(self.proj.bias[d:], 1.0)

    def forward(self, x):
        h, t = self.proj(x).chunk(2, dim=-1)
        t = torch.sigmoid(t)
        return t * F.relu(h) + (1 - t) * x


class CharHighwayTagger(nn.Module):
    def __init__(self, chars=100, ce=16, filters=((1, 32), (2, 32), (3, 64), (4, 64), (5, 96)), layers=8,
                 proj=96, hidden=64, tags=17):
        super().__init__()
        self.char_emb = nn.Embedding(chars, ce, padding_idx=0)
        self.convs = nn.ModuleList([nn.Conv1d(ce, n, w) for w, n in filters])
        d = sum(n for _, n in filters)
        self.highways = nn.Sequential(*[Highway(d) for _ in range(layers)])
        self.proj = nn.Linear(d, proj)
        self.lstm = nn.LSTM(proj, hidden, batch_first=True, bidirectional=True)
        self.out = nn.Linear(2 * hidden, tags)

    def forward(self, chars, tags):
        B, T, W = chars.shape
        x = self.char_emb(chars.view(B * T, W)).transpose(1, 2)
        x = torch.cat([torch.tanh(torch.max(conv(x), dim=-1).values) for conv in self.convs], dim=-1)
        x = self.proj(self.highways(x)).view(B, T, -1)
        h, _ = self.lstm(x)
        logits = self.out(h)
        return F.cross_entropy(logits.reshape(B * T, -1), tags.reshape(-1), ignore_index=-1)


# ----------------------------------------------------------------------------- FastSpeech 2 + conditional LN

def sinusoid_table(n, d):
    pos = torch.arange(n, dtype=torch.float64)[:, None]
    i = torch.arange(d, dtype=torch.float64)[None]
    angle = pos / torch.pow(10000.0, 2 * (i // 2) / d)
    table = torch.zeros(n, d, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angle[:, 0::2])
    table[:, 1::2] = torch.cos(angle[:, 1::2])
    return table.float()


class ConditionalLayerNorm(nn.Module):
    def __init__(self, d, spk, eps=1e-5):
        super().__init__()
        self.d, self.eps = d, eps
        self.W_scale = nn.Linear(spk, d)
        self.W_bias = nn.Linear(spk, d)
        nn.init.constant_(self.W_scale.weight, 0.0)
        nn.init.constant_(self.W_scale.bias, 1.0)
        nn.init.constant_(self.W_bias.weight, 0.0)
        nn.init.constant_(self.W_bias.bias, 0.0)

    def forward(self, x, s):
        mean = x.mean(dim=-1, keepdim=True)
        var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
        y = (x - mean) / torch.sqrt(var + self.eps)
        return y * self.W_scale(s).unsqueeze(1) + self.W_bias(s).unsqueeze(1)


class FFTBlock(nn.Module):
    def __init__(self, d, heads, filt, k, spk, p=0.1):
        super().__init__()
        self.h = heads
        self.qkv = nn.Linear(d, 3 * d)
        self.fc = nn.Linear(d, d)
        self.ln1 = ConditionalLayerNorm(d, spk)
        self.conv1 = nn.Conv1d(d, filt, k, padding=(k - 1) // 2)
        self.conv2 = nn.Conv1d(filt, d, 1)
        self.ln2 = ConditionalLayerNorm(d, spk)
        self.drop = nn.Dropout(p)

    def forward(self, x, pad, s):
        B, T, D = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.h, D // self.h).permute(2, 0, 3, 1, 4)
        att = (q @ k.transpose(-1, -2)) / math.sqrt(D // self.h)
        att = att.masked_fill(pad[:, None, None, :], float("-inf"))
        out = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, D)
        x = self.ln1(self.drop(self.fc(out)) + x, s).masked_fill(pad.unsqueeze(-1), 0.0)
        y = self.conv2(F.relu(self.conv1(x.transpose(1, 2)))).transpose(1, 2)
        return self.ln2(self.drop(y) + x, s).masked_fill(pad.unsqueeze(-1), 0.0)


class FastSpeech2CLN(nn.Module):
    def __init__(self, phones=80, d=96, heads=2, filt=256, k=9, enc=4, dec=4, n_mels=40, speakers=8, spk=64,
                 maxlen=512):
        super().__init__()
        self.src_emb = nn.Embedding(phones, d, padding_idx=0)
        self.register_buffer("pos", sinusoid_table(maxlen, d), persistent=False)
        self.spk_emb = nn.Embedding(speakers, spk)
        self.encoder = nn.ModuleList([FFTBlock(d, heads, filt, k, spk) for _ in range(enc)])
        self.dur = nn.Sequential(nn.Conv1d(d, d, 3, padding=1), nn.ReLU())
        self.dur_ln = nn.LayerNorm(d)
        self.dur_out = nn.Linear(d, 1)
        self.decoder = nn.ModuleList([FFTBlock(d, heads, filt, k, spk) for _ in range(dec)])
        self.mel = nn.Linear(d, n_mels)

    def forward(self, phones, src_pad, speaker, log_dur, align, mel_pad, mel):
        s = self.spk_emb(speaker)
        x = self.src_emb(phones) + self.pos[:phones.shape[1]].unsqueeze(0)
        for blk in self.encoder:
            x = blk(x, src_pad, s)
        d = self.dur_out(self.dur_ln(self.dur(x.transpose(1, 2)).transpose(1, 2))).squeeze(-1)
        keep_src = (~src_pad).to(x.dtype)
        dur_loss = (((d - log_dur) ** 2) * keep_src).sum() / keep_src.sum()
        y = torch.bmm(align, x) + self.pos[:align.shape[1]].unsqueeze(0)
        for blk in self.decoder:
            y = blk(y, mel_pad, s)
        keep = (~mel_pad).unsqueeze(-1).to(y.dtype)
        mel_loss = ((self.mel(y) - mel).abs() * keep).sum() / (keep.sum() * mel.shape[-1])
        return mel_loss + dur_loss


NAMES = ["sasrec_bce", "gemma2_softcap", "flow_matching_mlp", "ecapa_tdnn", "ebranchformer", "nf_resnet", "dcn_v2",
         "hawk_rglru", "char_highway", "fastspeech2_cln"]


def lengths_pad(B, T, lo, g):
    """A bool padding mask (True = padded) from random lengths in [lo, T], the first one full."""
    lens = torch.randint(lo, T + 1, (B,), generator=g)
    lens[0] = T
    return torch.arange(T)[None] >= lens[:, None], lens


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    if name == "sasrec_bce":
        T, items = 50, 1000
        pad, _ = lengths_pad(B, T, T // 3, g)
        pad = pad.flip(1)                                                        # SASRec left-pads histories
        seq = torch.randint(1, items + 1, (B, T), generator=g).masked_fill(pad, 0)
        pos = torch.randint(1, items + 1, (B, T), generator=g).masked_fill(pad, 0)
        neg = torch.randint(1, items + 1, (B, T), generator=g)
        return SASRec(items=items), [seq, pad, pos, neg]
    if name == "gemma2_softcap":
        T = 64
        pad, _ = lengths_pad(B, T, T // 2, g)
        ids = common.token_ids((B, T), 512, g).masked_fill(pad, 0)
        labels = ids.masked_fill(pad, -100)
        return Gemma2LM(), [ids, (~pad).to(torch.int64), labels]
    if name == "flow_matching_mlp":
        N = 16 * B
        y = common.token_ids((N,), 10, g)
        drop = torch.rand((N,), generator=g) < 0.1
        t = torch.rand((N,), generator=g, dtype=torch.float64).to(dtype)
        return FlowMatchingMLP(), [common.float_input((N, 64), dtype, g), common.float_input((N, 64), dtype, g), t, y,
                                   drop]
    if name == "ecapa_tdnn":
        T = 200
        pad, _ = lengths_pad(B, T, T // 2, g)
        return ECAPATDNN(), [common.float_input((B, T, 40), dtype, g), pad, common.token_ids((B,), 50, g)]
    if name == "ebranchformer":
        T = 100
        pad, _ = lengths_pad(B, T, T // 2, g)
        tgt = common.token_ids((B, T), 48, g).masked_fill(pad, -100)
        return EBranchformer(), [common.float_input((B, T, 40), dtype, g), pad, tgt]
    if name == "nf_resnet":
        side = max(32, S // 2 // 8 * 8)                                          # 48 at --image 96
        return NFResNet(), [common.float_input((B, 3, side, side), dtype, g), common.token_ids((B,), 10, g)]
    if name == "dcn_v2":
        N = 64 * B
        cards = (100, 50, 20, 200, 30, 10, 60, 40)
        sparse = torch.stack([torch.randint(0, c, (N,), generator=g) for c in cards], dim=1)
        dense = torch.rand((N, 13), generator=g, dtype=torch.float64).mul(100).floor().to(dtype)
        clicks = (torch.rand((N,), generator=g) < 0.25).to(dtype)
        return DCNv2(cards), [sparse, dense, clicks]
    if name == "hawk_rglru":
        t = common.token_ids((B, 33), 256, g)
        return HawkLM(), [t[:, :-1].contiguous(), t[:, 1:].contiguous()]
    if name == "char_highway":
        T, W = 24, 12
        pad, _ = lengths_pad(B, T, T // 2, g)
        chars = torch.randint(1, 100, (B, T, W), generator=g)
        wl = torch.randint(2, W + 1, (B, T, 1), generator=g)
        chars = chars.masked_fill(torch.arange(W)[None, None] >= wl, 0).masked_fill(pad[..., None], 0)
        tags = common.token_ids((B, T), 17, g).masked_fill(pad, -1)
        return CharHighwayTagger(), [chars, tags]
    if name == "fastspeech2_cln":
        Tp, Tm = 32, 128
        src_pad, lens = lengths_pad(B, Tp, Tp // 2, g)
        phones = torch.randint(1, 80, (B, Tp), generator=g).masked_fill(src_pad, 0)
        dur = torch.randint(1, 7, (B, Tp), generator=g).masked_fill(src_pad, 0)
        cum = dur.cumsum(1)
        dur[:, -1] += (Tm - cum[:, -1]).clamp(max=0)                              # keep inside Tm frames
        dur = dur.clamp(min=0)
        cum = dur.cumsum(1)
        start = cum - dur
        frames = torch.arange(Tm)[None, :, None]
        align = ((frames >= start[:, None]) & (frames < cum[:, None])).to(dtype)   # (B, Tm, Tp)
        mel_pad = align.sum(-1) == 0
        mel_pad[:, 0] = False
        log_dur = torch.log(dur.to(torch.float64) + 1).to(dtype)
        return FastSpeech2CLN(), [phones, src_pad, common.token_ids((B,), 8, g), log_dur, align, mel_pad,
                                  common.float_input((B, Tm, 40), dtype, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen15.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
