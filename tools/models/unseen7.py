#!/usr/bin/env python3
"""unseen7.py — a seventh set of models nobody tuned rkmate for (after
tools/models/unseen.py ... unseen5.py), all small and hand-written in the
style of code users copy from HuggingFace transformers, timm and research
repositories.  Each has idioms the other sets do not: BERT as HF writes it with
P-tuning v2's deep prompt (position_ids / token_type_ids buffers sliced and
expanded, the extended attention mask (1 - m) * finfo.min added to the scores
and lengthened by torch.cat with ones for the prefix, a prefix Embedding
viewed, permuted and split(2) into per-layer past_key_values concatenated
before each layer's keys and values, a tanh pooler, an MLM decoder tied to
the word embedding plus a bias parameter, a dict output), GPT-NeoX + GPT-J
layers (fused query_key_value viewed (B, L, H, 3 hd) and sliced, partial
rotary on the first rotary_ndims with rotate_half and cat, torch.baddbmm on
zeros with alpha = 1/sqrt(hd), a causal mask from torch.triu(ones(bool))
built in forward with masked_fill(finfo.min), the parallel residual
x + attn(ln1(x)) + mlp(ln2(x)); GPT-J's sin/cos table gathered by
position_ids, repeat_interleave, rotate_every_two by strided slices + stack
+ flatten, float32 scores divided by a scale_attn buffer, torch.where with a
finfo.min tensor, gelu_new), DeBERTa-v2 disentangled attention (log-bucket
relative positions from aranges in forward: sign, abs, where, log, ceil;
content-to-position and position-to-content bmm scores picked by
torch.gather over a torch.clamp-ed index expanded over batch x heads, the
outer-product attention mask and XSoftmax (masked_fill finfo.min, softmax,
masked_fill 0), an enhanced-mask-decoder-style last layer), ALBERT (factorised
embeddings projected 16 -> 64, one layer's parameters shared by 6 layers,
three int64 inputs, MLM decoding through the transposed tied embedding, a
sentence-order head), a Funnel transformer (avg_pool1d over the tokens with
the [CLS] token kept apart, pooled queries attending to unpooled keys, the
mask min-pooled by -max_pool1d(-m), a query bias, einsum scores, softmax with
dtype=float32, a decoder upsampling by repeat_interleave cut with a slice and
added to the first block's output), Reformer-lite (axial position embeddings:
two parameters expanded and concatenated; the hidden state duplicated by
torch.cat([x, x], -1) and chunk-ed; hand-written reversible coupling
y1 = x1 + Attn(x2), y2 = x2 + FF(y1); chunked feed-forward; local attention
over chunks looking one chunk back with shared QK, normalised keys, a
self-attention penalty by torch.where and logsumexp normalisation), a
Universal Transformer with ACT halting (one shared layer applied 5 times,
timing and hop signals from buffers, sigmoid halting probabilities,
comparisons with the threshold cast to float, remainders, n_updates, an
update-weighted running state, a ponder-cost output), a ViT of today
(register tokens, QK-norm, F.scaled_dot_product_attention with dropout_p > 0,
qkv.unbind(0), LayerScale with one in-place x.mul_(gamma), the older DropPath
by torch.rand per sample, floor_ and div(keep_prob), SwiGLU and GeGLU GluMlps
by chunk(2, -1), nn.Identity placeholders, a torch.jit.is_scripting guard,
fc_norm over the non-prefix tokens), a Mistral-like decoder continuing a
cached prompt (the prompt's keys and values computed under torch.no_grad()
and concatenated, position ids offset by the past length, cos/sin looked up
by advanced indexing, grouped-query attention by HF's repeat_kv expand +
reshape and multi-query attention by repeat_interleave, a float
sliding-window mask from torch.full(finfo.min) and masked_fill, SDPA with
that float attn_mask and dropout_p = 0.1), a T5-style encoder-decoder (shared
embedding, T5LayerNorm, unscaled scores, cross-attention reusing the
encoder's extended mask, a tril causal mask times the decoder padding,
decoder inputs shifted right by torch.cat of a start column and
labels[:, :-1] then masked_fill of -100, the last hidden state scaled by
d_model ** -0.5 before the tied LM head, F.cross_entropy(ignore_index=-100)
inside, (loss, logits) out), a sequence-first captioner on
nn.MultiheadAttention (batch_first=False, a CNN map permuted to (HW, B, C),
float causal and key-padding masks, cross-attention with kdim = vdim != E,
add_bias_kv=True, add_zero_attn=True and per-head weights returned as an
output), timm's ConvMixer (padding="same" depthwise convs, one with an even
kernel, hard-swish/hard-sigmoid SE, SelectAdaptivePool2d), PoolFormer +
EfficientFormer (AvgPool2d(count_include_pad=False)(x) - x, GroupNorm(1, C),
LayerScale by unsqueeze(-1).unsqueeze(-1) and view(1, -1, 1, 1), DropPath,
Meta4D BatchNorm ConvMlp, Flat, attention_biases[:, idxs], averaged head and
distillation head) and CoAtNet-lite (pre-norm MBConv with hard-swish and SE,
max-pooled shortcuts, transformer stages on a 2D map flattened and reshaped
back, F.adaptive_avg_pool2d(x, 1).flatten(1)).

Exported like the zoo (tools/models/common.export), with the zoo's options,
so that `tools/bench/zoo.py --models-script tools/models/unseen7.py` runs
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
from unseen2 import RMSNorm  # noqa: E402  (hand-written, as LLaMA's)

nn = torch.nn
F = torch.nn.functional


def gelu_new(x):
    """HF's "gelu_new" (tanh approximation written out)."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def extended_mask(mask, dtype):
    """HF's get_extended_attention_mask: (B, L) of 1/0 -> (B, 1, 1, L) of 0 / finfo.min."""
    ext = mask[:, None, None, :].to(dtype=dtype)
    return (1.0 - ext) * torch.finfo(dtype).min


# ----------------------------------------------------------------------------- BERT, HF style, P-tuning v2 prefix

class BertSelfAttention(nn.Module):
    def __init__(self, d, heads, p=0.1):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.query = nn.Linear(d, d); self.key = nn.Linear(d, d); self.value = nn.Linear(d, d)
        self.dropout = nn.Dropout(p)
        self.dense = nn.Linear(d, d); self.LayerNorm = nn.LayerNorm(d, eps=1e-12); self.out_drop = nn.Dropout(p)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.h, self.hd)
        return x.view(new_x_shape).permute(0, 2, 1, 3)

    def forward(self, hidden, ext_mask, past_key_value):
        q = self.transpose_for_scores(self.query(hidden))
        k = self.transpose_for_scores(self.key(hidden))
        v = self.transpose_for_scores(self.value(hidden))
        k = torch.cat([past_key_value[0], k], dim=2)
        v = torch.cat([past_key_value[1], v], dim=2)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd)
        scores = scores + ext_mask
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (self.h * self.hd,))
        return self.LayerNorm(self.out_drop(self.dense(ctx)) + hidden)


class BertLayer(nn.Module):
    def __init__(self, d, heads, p=0.1):
        super().__init__()
        self.attention = BertSelfAttention(d, heads, p)
        self.intermediate = nn.Linear(d, 4 * d)
        self.output = nn.Linear(4 * d, d); self.LayerNorm = nn.LayerNorm(d, eps=1e-12); self.drop = nn.Dropout(p)

    def forward(self, hidden, ext_mask, past_key_value):
        a = self.attention(hidden, ext_mask, past_key_value)
        return self.LayerNorm(self.drop(self.output(F.gelu(self.intermediate(a)))) + a)


class BertPrefix(nn.Module):
    """BERT as HF writes it (position_ids and token_type_ids buffers sliced and expanded, word + position
    + token type embeddings, LayerNorm eps 1e-12, extended attention mask (1 - m) * finfo.min added to the
    scores) with P-tuning v2's deep prompt: prefix_tokens buffer -> Embedding -> view(B, P, 2 * layers, H,
    hd).permute([2, 0, 3, 1, 4]).split(2) as past_key_values concatenated before every layer's keys and
    values, the attention mask extended by torch.cat with ones; a tanh pooler on [CLS] and an MLM head whose
    decoder weight is the word embedding (tied) plus a separate bias parameter."""

    def __init__(self, vocab=512, d=64, heads=4, layers=3, prefix=8, max_pos=128):
        super().__init__()
        self.P, self.layers, self.h, self.hd = prefix, layers, heads, d // heads
        self.word_embeddings = nn.Embedding(vocab, d, padding_idx=0)
        self.position_embeddings = nn.Embedding(max_pos, d)
        self.token_type_embeddings = nn.Embedding(2, d)
        self.register_buffer("position_ids", torch.arange(max_pos).expand((1, -1)), persistent=False)
        self.register_buffer("token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long),
                             persistent=False)
        self.emb_ln = nn.LayerNorm(d, eps=1e-12); self.emb_drop = nn.Dropout(0.1)
        self.register_buffer("prefix_tokens", torch.arange(prefix).long())
        self.prefix_encoder = nn.Embedding(prefix, layers * 2 * d)
        self.prefix_drop = nn.Dropout(0.1)
        self.layer = nn.ModuleList([BertLayer(d, heads) for _ in range(layers)])
        self.pooler = nn.Linear(d, d)
        self.transform = nn.Linear(d, d); self.transform_ln = nn.LayerNorm(d, eps=1e-12)
        self.decoder_bias = nn.Parameter(torch.zeros(vocab))

    def get_prompt(self, batch_size):
        prefix_tokens = self.prefix_tokens.unsqueeze(0).expand(batch_size, -1)
        past_key_values = self.prefix_encoder(prefix_tokens)
        past_key_values = past_key_values.view(batch_size, self.P, self.layers * 2, self.h, self.hd)
        past_key_values = self.prefix_drop(past_key_values)
        return past_key_values.permute([2, 0, 3, 1, 4]).split(2)

    def forward(self, input_ids, attention_mask):
        B, L = input_ids.size()
        position_ids = self.position_ids[:, 0:L]
        token_type_ids = self.token_type_ids[:, :L].expand(B, L)
        emb = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids)
        emb = emb + self.position_embeddings(position_ids)
        hidden = self.emb_drop(self.emb_ln(emb))
        past = self.get_prompt(B)
        prefix_mask = torch.ones(B, self.P, dtype=attention_mask.dtype, device=attention_mask.device)
        ext = extended_mask(torch.cat((prefix_mask, attention_mask), dim=1), hidden.dtype)
        for i, layer in enumerate(self.layer):
            hidden = layer(hidden, ext, past[i])
        pooled = torch.tanh(self.pooler(hidden[:, 0]))
        t = self.transform_ln(F.gelu(self.transform(hidden)))
        logits = F.linear(t, self.word_embeddings.weight) + self.decoder_bias
        return {"last_hidden_state": hidden, "pooler_output": pooled, "logits": logits}


# ----------------------------------------------------------------------------- GPT-NeoX + GPT-J

class NeoXRotary(nn.Module):
    def __init__(self, dim, base=10000):
        super().__init__()
        self.register_buffer("inv_freq", 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim)), persistent=False)

    def forward(self, x, L):
        t = torch.arange(L, device=x.device, dtype=self.inv_freq.dtype)
        freqs = torch.einsum("i,j->ij", t, self.inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos()[None, None, :, :].to(x.dtype), emb.sin()[None, None, :, :].to(x.dtype)


def rotate_half(x):
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def rotate_every_two(x):
    x1 = x[:, :, :, ::2]
    x2 = x[:, :, :, 1::2]
    x = torch.stack((-x2, x1), dim=-1)
    return x.flatten(-2)


class NeoXLayer(nn.Module):
    """GPT-NeoX: fused query_key_value viewed (B, L, H, 3 hd) and sliced, partial rotary on the first
    rotary_ndims of each head (rotate_half, cat with the pass-through part), scores by torch.baddbmm on a
    zeros tensor with alpha = 1 / sqrt(hd), a causal mask torch.triu(ones(bool), 1) built in forward,
    masked_fill with finfo.min, parallel residual x + attn(ln1(x)) + mlp(ln2(x))."""

    def __init__(self, d, heads, rotary_pct=0.25):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.rot = int(self.hd * rotary_pct)
        self.input_layernorm = nn.LayerNorm(d); self.post_attention_layernorm = nn.LayerNorm(d)
        self.query_key_value = nn.Linear(d, 3 * d); self.dense = nn.Linear(d, d)
        self.rotary_emb = NeoXRotary(self.rot)
        self.norm_factor = math.sqrt(self.hd)
        self.attention_dropout = nn.Dropout(0.1)
        self.dense_h_to_4h = nn.Linear(d, 4 * d); self.dense_4h_to_h = nn.Linear(4 * d, d)

    def attn(self, x):
        B, L, _ = x.shape
        qkv = self.query_key_value(x)
        qkv = qkv.view(qkv.size()[:-1] + (self.h, 3 * self.hd))
        q = qkv[..., : self.hd].permute(0, 2, 1, 3)
        k = qkv[..., self.hd: 2 * self.hd].permute(0, 2, 1, 3)
        v = qkv[..., 2 * self.hd:].permute(0, 2, 1, 3)
        q_rot, q_pass = q[..., : self.rot], q[..., self.rot:]
        k_rot, k_pass = k[..., : self.rot], k[..., self.rot:]
        cos, sin = self.rotary_emb(v, L)
        q = torch.cat(((q_rot * cos) + (rotate_half(q_rot) * sin), q_pass), dim=-1)
        k = torch.cat(((k_rot * cos) + (rotate_half(k_rot) * sin), k_pass), dim=-1)
        q = q.reshape(B * self.h, L, self.hd)
        k = k.reshape(B * self.h, L, self.hd)
        scores = torch.zeros(B * self.h, L, L, dtype=q.dtype, device=q.device)
        scores = torch.baddbmm(scores, q, k.transpose(1, 2), beta=1.0, alpha=1.0 / self.norm_factor)
        scores = scores.view(B, self.h, L, L)
        causal = torch.triu(torch.ones(L, L, dtype=torch.bool, device=x.device), diagonal=1)
        scores = scores.masked_fill(causal, torch.finfo(scores.dtype).min)
        w = self.attention_dropout(F.softmax(scores, dim=-1))
        out = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(B, L, self.h * self.hd)
        return self.dense(out)

    def forward(self, x):
        mlp = self.dense_4h_to_h(F.gelu(self.dense_h_to_4h(self.post_attention_layernorm(x))))
        return self.attn(self.input_layernorm(x)) + mlp + x


class GPTJLayer(nn.Module):
    """GPT-J: one LayerNorm shared by attention and MLP in parallel, separate q/k/v without bias, a sin/cos
    table buffer gathered by position_ids (torch.gather with a repeated index), duplicate_interleave by
    repeat_interleave, rotate_every_two (strided slices, stack, flatten) on the first rotary_dim, attention
    in float32 divided by a scale_attn buffer, torch.where(causal, scores, finfo.min tensor)."""

    def __init__(self, d, heads, rotary_dim=8, max_pos=128):
        super().__init__()
        self.h, self.hd, self.rd = heads, d // heads, rotary_dim
        self.ln_1 = nn.LayerNorm(d)
        self.q_proj = nn.Linear(d, d, bias=False); self.k_proj = nn.Linear(d, d, bias=False)
        self.v_proj = nn.Linear(d, d, bias=False); self.out_proj = nn.Linear(d, d, bias=False)
        inv = 1.0 / (10000 ** (torch.arange(0, rotary_dim, 2, dtype=torch.float) / rotary_dim))
        sinusoid = torch.einsum("i , j -> i j", torch.arange(max_pos, dtype=torch.float), inv).float()
        self.register_buffer("embed_positions", torch.cat((torch.sin(sinusoid), torch.cos(sinusoid)), dim=1),
                             persistent=False)
        self.register_buffer("scale_attn", torch.sqrt(torch.tensor(self.hd, dtype=torch.float32)), persistent=False)
        self.fc_in = nn.Linear(d, 4 * d); self.fc_out = nn.Linear(4 * d, d)
        self.resid_dropout = nn.Dropout(0.1)

    def apply_rotary(self, t, sin, cos):
        sin = torch.repeat_interleave(sin[:, :, None, :], 2, 3)
        cos = torch.repeat_interleave(cos[:, :, None, :], 2, 3)
        return (t * cos) + (rotate_every_two(t) * sin)

    def forward(self, x, position_ids):
        B, L, d = x.shape
        h = self.ln_1(x)
        q = self.q_proj(h).view(B, L, self.h, self.hd)
        k = self.k_proj(h).view(B, L, self.h, self.hd)
        v = self.v_proj(h).view(B, L, self.h, self.hd).permute(0, 2, 1, 3)
        ep = self.embed_positions.repeat(position_ids.shape[0], 1, 1)
        rep = position_ids.unsqueeze(-1).repeat(1, 1, ep.shape[-1])
        sincos = torch.gather(ep, 1, rep)
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
        q = torch.cat([self.apply_rotary(q[:, :, :, : self.rd], sin, cos), q[:, :, :, self.rd:]], dim=-1)
        k = torch.cat([self.apply_rotary(k[:, :, :, : self.rd], sin, cos), k[:, :, :, self.rd:]], dim=-1)
        q, k = q.permute(0, 2, 1, 3), k.permute(0, 2, 1, 3)
        scores = torch.matmul(q.to(torch.float32), k.to(torch.float32).transpose(-1, -2))
        causal = torch.tril(torch.ones(L, L, dtype=torch.bool, device=x.device)).view(1, 1, L, L)
        mask_value = torch.tensor(torch.finfo(scores.dtype).min, dtype=scores.dtype, device=scores.device)
        scores = torch.where(causal, scores, mask_value) / self.scale_attn
        w = F.softmax(scores, dim=-1).to(v.dtype)
        a = torch.matmul(w, v).permute(0, 2, 1, 3).contiguous().view(B, L, d)
        a = self.resid_dropout(self.out_proj(a))
        m = self.resid_dropout(self.fc_out(gelu_new(self.fc_in(h))))
        return a + m + x


class NeoXJ(nn.Module):
    def __init__(self, vocab=256, d=64, heads=4):
        super().__init__()
        self.embed_in = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([NeoXLayer(d, heads), GPTJLayer(d, heads), NeoXLayer(d, heads)])
        self.final_layer_norm = nn.LayerNorm(d)
        self.embed_out = nn.Linear(d, vocab, bias=False)

    def forward(self, input_ids):
        B, L = input_ids.shape
        position_ids = torch.arange(0, L, dtype=torch.long, device=input_ids.device).unsqueeze(0).expand(B, -1)
        x = self.embed_in(input_ids)
        for layer in self.layers:
            x = layer(x, position_ids) if isinstance(layer, GPTJLayer) else layer(x)
        return self.embed_out(self.final_layer_norm(x))


# ----------------------------------------------------------------------------- DeBERTa-v2

def make_log_bucket_position(relative_pos, bucket_size, max_position):
    sign = torch.sign(relative_pos)
    mid = bucket_size // 2
    abs_pos = torch.where((relative_pos < mid) & (relative_pos > -mid),
                          torch.tensor(mid - 1).type_as(relative_pos), torch.abs(relative_pos))
    log_pos = torch.ceil(torch.log(abs_pos / mid) / torch.log(torch.tensor((max_position - 1) / mid))
                         * (mid - 1)) + mid
    return torch.where(abs_pos <= mid, relative_pos.type_as(log_pos), log_pos * sign)


def build_relative_position(q, k, bucket_size, max_position, device):
    q_ids = torch.arange(0, q, device=device)
    k_ids = torch.arange(0, k, device=device)
    rel = q_ids[:, None] - k_ids[None, :]
    rel = make_log_bucket_position(rel, bucket_size, max_position).to(torch.long)
    return rel[:q, :].unsqueeze(0)


class DisentangledSelfAttention(nn.Module):
    def __init__(self, d, heads, span):
        super().__init__()
        self.h, self.hd, self.span = heads, d // heads, span
        self.query_proj = nn.Linear(d, d); self.key_proj = nn.Linear(d, d); self.value_proj = nn.Linear(d, d)
        self.dropout = nn.Dropout(0.1); self.pos_dropout = nn.Dropout(0.1)
        self.dense = nn.Linear(d, d); self.LayerNorm = nn.LayerNorm(d, eps=1e-7)

    def t4s(self, x):
        x = x.view(x.size()[:-1] + (self.h, -1))
        return x.permute(0, 2, 1, 3).contiguous().view(-1, x.size(1), x.size(-1))

    def forward(self, hidden, mask, rel_pos, rel_emb):
        BH = hidden.size(0) * self.h
        q, k, v = self.t4s(self.query_proj(hidden)), self.t4s(self.key_proj(hidden)), self.t4s(self.value_proj(hidden))
        scale_factor = 3
        scale = math.sqrt(q.size(-1) * scale_factor)
        att = torch.bmm(q, k.transpose(-1, -2) / torch.tensor(scale, dtype=q.dtype))
        rel_emb = self.pos_dropout(rel_emb[0: self.span * 2, :].unsqueeze(0))
        pos_q = self.t4s(self.query_proj(rel_emb)).repeat(BH // self.h, 1, 1)
        pos_k = self.t4s(self.key_proj(rel_emb)).repeat(BH // self.h, 1, 1)
        c2p = torch.bmm(q, pos_k.transpose(-1, -2))
        c2p_pos = torch.clamp(rel_pos + self.span, 0, self.span * 2 - 1)
        c2p = torch.gather(c2p, dim=-1, index=c2p_pos.squeeze(0).expand([BH, q.size(1), rel_pos.size(-1)]))
        p2c_pos = torch.clamp(-rel_pos + self.span, 0, self.span * 2 - 1)
        p2c = torch.bmm(k, pos_q.transpose(-1, -2))
        p2c = torch.gather(p2c, dim=-1, index=p2c_pos.squeeze(0).expand([BH, k.size(-2), k.size(-2)])).transpose(-1, -2)
        att = att + c2p / scale + p2c / scale
        att = att.view(-1, self.h, att.size(-2), att.size(-1))
        # XSoftmax: masked_fill with finfo.min, softmax, masked_fill 0
        rmask = ~(mask.to(torch.bool))
        p = torch.softmax(att.masked_fill(rmask, torch.finfo(att.dtype).min), -1).masked_fill(rmask, 0)
        p = self.dropout(p)
        ctx = torch.bmm(p.view(-1, p.size(-2), p.size(-1)), v)
        ctx = ctx.view(-1, self.h, ctx.size(-2), ctx.size(-1)).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size()[:-2] + (-1,))
        return self.LayerNorm(self.dense(ctx) + hidden)


class DeBERTa(nn.Module):
    """DeBERTa-v2: log-bucket relative positions (torch.sign, abs, where on a band, log, ceil) from aranges
    built in forward, a shared LayerNorm'd rel_embeddings table, content-to-position and
    position-to-content scores by bmm then torch.gather over a clamped index expanded over batch x heads,
    scores scaled by sqrt(3 hd), the attention mask as get_attention_mask's outer product
    (m[:, None, None, :] * m[:, None, :, None]) and XSoftmax (masked_fill finfo.min, softmax, masked_fill
    0), an enhanced-mask-decoder-style last layer re-reading the embeddings plus absolute positions."""

    def __init__(self, vocab=256, d=64, heads=4, layers=3, buckets=16, max_rel=64):
        super().__init__()
        self.buckets, self.max_rel = buckets, max_rel
        self.word_embeddings = nn.Embedding(vocab, d); self.emb_ln = nn.LayerNorm(d, eps=1e-7)
        self.position_embeddings = nn.Embedding(128, d)
        self.rel_embeddings = nn.Embedding(buckets * 2, d); self.rel_ln = nn.LayerNorm(d, eps=1e-7)
        self.layer = nn.ModuleList([DisentangledSelfAttention(d, heads, buckets) for _ in range(layers)])
        self.ffn = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Linear(2 * d, d))
                                  for _ in range(layers)])
        self.ffn_ln = nn.ModuleList([nn.LayerNorm(d, eps=1e-7) for _ in range(layers)])
        self.emd = DisentangledSelfAttention(d, heads, buckets)
        self.head = nn.Linear(d, vocab)

    def forward(self, input_ids, attention_mask):
        B, L = input_ids.shape
        h = self.emb_ln(self.word_embeddings(input_ids))
        h = h * attention_mask.unsqueeze(2).to(h.dtype)
        ext = attention_mask.unsqueeze(1).unsqueeze(2)
        ext = ext * ext.squeeze(-2).unsqueeze(-1)
        rel_pos = build_relative_position(L, L, self.buckets, self.max_rel, h.device)
        rel_emb = self.rel_ln(self.rel_embeddings.weight)
        for att, ffn, ln in zip(self.layer, self.ffn, self.ffn_ln):
            h = att(h, ext, rel_pos, rel_emb)
            h = ln(h + ffn(h))
        pos = self.position_embeddings(torch.arange(L, device=h.device).unsqueeze(0))
        q = self.emd(h + pos, ext, rel_pos, rel_emb)
        return self.head(q)


# ----------------------------------------------------------------------------- ALBERT

class AlbertLayer(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.query = nn.Linear(d, d); self.key = nn.Linear(d, d); self.value = nn.Linear(d, d)
        self.dense = nn.Linear(d, d); self.attn_ln = nn.LayerNorm(d, eps=1e-12)
        self.ffn = nn.Linear(d, 4 * d); self.ffn_output = nn.Linear(4 * d, d)
        self.full_layer_layer_norm = nn.LayerNorm(d, eps=1e-12)
        self.attention_dropout = nn.Dropout(0.1)

    def forward(self, x, ext):
        B, L, d = x.shape
        q = self.query(x).view(B, L, self.h, self.hd).transpose(1, 2)
        k = self.key(x).view(B, L, self.h, self.hd).transpose(1, 2)
        v = self.value(x).view(B, L, self.h, self.hd).transpose(1, 2)
        s = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.hd) + ext
        p = self.attention_dropout(nn.functional.softmax(s, dim=-1))
        ctx = torch.matmul(p, v).transpose(2, 1).flatten(2)
        a = self.attn_ln(x + self.dense(ctx))
        return self.full_layer_layer_norm(self.ffn_output(gelu_new(self.ffn(a))) + a)


class Albert(nn.Module):
    """ALBERT: factorised embeddings (E = 16 projected to H = 64 by embedding_hidden_mapping_in), one
    layer's parameters shared by all 6 layers (the same module called in a loop), gelu_new, the
    extended attention mask from an int64 mask input, an MLM head projecting back to E and decoding with
    the tied word embedding, a sentence-order head on a tanh pooler; a dict output."""

    def __init__(self, vocab=256, E=16, d=64, heads=4, layers=6):
        super().__init__()
        self.layers = layers
        self.word_embeddings = nn.Embedding(vocab, E); self.position_embeddings = nn.Embedding(128, E)
        self.token_type_embeddings = nn.Embedding(2, E); self.emb_ln = nn.LayerNorm(E, eps=1e-12)
        self.emb_drop = nn.Dropout(0.1)
        self.embedding_hidden_mapping_in = nn.Linear(E, d)
        self.shared = AlbertLayer(d, heads)
        self.pooler = nn.Linear(d, d); self.sop = nn.Linear(d, 2)
        self.mlm_dense = nn.Linear(d, E); self.mlm_ln = nn.LayerNorm(E)
        self.mlm_bias = nn.Parameter(torch.zeros(vocab))

    def forward(self, input_ids, attention_mask, token_type_ids):
        B, L = input_ids.shape
        pos = torch.arange(L, device=input_ids.device).expand((1, -1))
        e = self.word_embeddings(input_ids) + self.token_type_embeddings(token_type_ids) + self.position_embeddings(pos)
        h = self.embedding_hidden_mapping_in(self.emb_drop(self.emb_ln(e)))
        ext = extended_mask(attention_mask, h.dtype)
        for _ in range(self.layers):
            h = self.shared(h, ext)
        pooled = torch.tanh(self.pooler(h[:, 0]))
        m = self.mlm_ln(gelu_new(self.mlm_dense(h)))
        logits = torch.matmul(m, self.word_embeddings.weight.t()) + self.mlm_bias
        return {"prediction_logits": logits, "sop_logits": self.sop(pooled)}


# ----------------------------------------------------------------------------- Funnel transformer

class FunnelAttn(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.q = nn.Linear(d, d, bias=False); self.kv = nn.Linear(d, 2 * d)
        self.r_w_bias = nn.Parameter(torch.zeros(heads, self.hd))
        self.o = nn.Linear(d, d); self.ln = nn.LayerNorm(d, eps=1e-9)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(2 * d, d))
        self.ff_ln = nn.LayerNorm(d, eps=1e-9)

    def forward(self, query, kv, ext):
        B, Lq, d = query.shape
        Lk = kv.shape[1]
        q = self.q(query).view(B, Lq, self.h, self.hd)
        k, v = self.kv(kv).view(B, Lk, 2, self.h, self.hd).unbind(2)
        s = torch.einsum("bind,bjnd->bnij", (q + self.r_w_bias) * self.hd ** -0.5, k)
        s = s.float() + ext
        p = torch.softmax(s, dim=-1, dtype=torch.float).type_as(q)
        ctx = torch.einsum("bnij,bjnd->bind", p, v).reshape(B, Lq, d)
        h = self.ln(query + self.o(ctx))
        return self.ff_ln(h + self.ff(h))


class Funnel(nn.Module):
    """Funnel transformer: the sequence pooled between blocks by avg_pool1d over tokens (stride 2, the
    [CLS] token kept apart: cat of x[:, :1] with the pooled x[:, 1:], ceil_mode), the first layer of a
    pooled block attending from the pooled queries to the unpooled keys/values, the attention mask pooled
    by -max_pool1d(-m) (a min pool), a query bias parameter added before the einsum scores, softmax in
    float32 with dtype=, and a decoder upsampling by repeat_interleave, cut to L with a slice and added to
    the first block's output; token-level logits."""

    def __init__(self, vocab=256, d=64, heads=4):
        super().__init__()
        self.emb = nn.Embedding(vocab, d); self.ln = nn.LayerNorm(d, eps=1e-9)
        self.blocks = nn.ModuleList([nn.ModuleList([FunnelAttn(d, heads) for _ in range(2)]) for _ in range(3)])
        self.decoder = nn.ModuleList([FunnelAttn(d, heads) for _ in range(2)])
        self.head = nn.Linear(d, vocab)

    @staticmethod
    def pool(x):
        """B, L, d -> B, 1 + ceil((L - 1) / 2), d"""
        rest = F.avg_pool1d(x[:, 1:].transpose(1, 2), 2, stride=2, ceil_mode=True).transpose(1, 2)
        return torch.cat([x[:, :1], rest], dim=1)

    @staticmethod
    def pool_mask(m):
        rest = -F.max_pool1d(-m[:, None, 1:], 2, stride=2, ceil_mode=True)[:, 0]
        return torch.cat([m[:, :1], rest], dim=1)

    def forward(self, input_ids, attention_mask):
        L = input_ids.shape[1]
        h = self.ln(self.emb(input_ids))
        m = attention_mask.to(h.dtype)
        first = None
        for bi, block in enumerate(self.blocks):
            for li, layer in enumerate(block):
                ext = ((1.0 - m[:, None, None, :]) * -1e30)
                if bi > 0 and li == 0:
                    q = self.pool(h)
                    h = layer(q, h, ext)
                    m = self.pool_mask(m)
                else:
                    h = layer(h, h, ext)
            if bi == 0:
                first = h
        up = torch.repeat_interleave(h[:, 1:], 4, dim=1)
        up = torch.cat([h[:, :1], up], dim=1)[:, :L]
        h = up + first
        ext = (1.0 - attention_mask.to(h.dtype)[:, None, None, :]) * -1e30
        for layer in self.decoder:
            h = layer(h, h, ext)
        return self.head(h)


# ----------------------------------------------------------------------------- Reformer-lite

class LocalAttn(nn.Module):
    """Reformer's LocalSelfAttention: shared QK projection (keys = normalised queries), chunks of 8 that
    also look one chunk back (torch.cat of the chunk with the previous chunk, built by torch.cat of the last
    chunk and all but the last), a mask against attending to the own position (self_mask_value -1e5) and
    a causal mask by position indices, logsumexp normalisation."""

    def __init__(self, d, heads, chunk=8):
        super().__init__()
        self.h, self.hd, self.c = heads, d // heads, chunk
        self.qk = nn.Linear(d, d, bias=False); self.v = nn.Linear(d, d, bias=False)
        self.o = nn.Linear(d, d)

    @staticmethod
    def look_back(x):   # B, H, n, c, hd -> B, H, n, 2c, hd
        prev = torch.cat([x[:, :, -1:], x[:, :, :-1]], dim=2)
        return torch.cat([prev, x], dim=3)

    def forward(self, x):
        B, L, d = x.shape
        n = L // self.c
        qk = self.qk(x).view(B, L, self.h, self.hd).transpose(1, 2)
        v = self.v(x).view(B, L, self.h, self.hd).transpose(1, 2)
        k = qk / torch.sqrt(torch.tensor(self.hd, dtype=qk.dtype))
        k = k / qk.norm(dim=-1, keepdim=True).clamp_min(1e-6)
        q = qk.reshape(B, self.h, n, self.c, self.hd)
        k = self.look_back(k.reshape(B, self.h, n, self.c, self.hd))
        v = self.look_back(v.reshape(B, self.h, n, self.c, self.hd))
        pos = torch.arange(L, device=x.device).view(n, self.c)
        kpos = torch.cat([torch.roll(pos, 1, 0), pos], dim=1)        # n, 2c
        s = torch.matmul(q, k.transpose(-1, -2))                     # B, H, n, c, 2c
        causal = pos.unsqueeze(-1) < kpos.unsqueeze(-2)
        first = torch.zeros(n, 1, 1, dtype=torch.bool, device=x.device)
        first[0] = True
        wrapped = first & (kpos.unsqueeze(-2) >= L - self.c)  # the first chunk's look-back wrapped around
        s = s.masked_fill(causal | wrapped, -1e9)
        s = torch.where(pos.unsqueeze(-1) == kpos.unsqueeze(-2), torch.tensor(-1e5, dtype=s.dtype), s)
        p = torch.exp(s - torch.logsumexp(s, dim=-1, keepdim=True))
        out = torch.matmul(p, v).reshape(B, self.h, L, self.hd).transpose(1, 2).reshape(B, L, d)
        return self.o(out)


class Reformer(nn.Module):
    """Reformer-lite: axial position embeddings (two parameters expanded over (B, 8, 8) and concatenated
    on the feature axis, then reshaped to L = 64), the hidden state duplicated with torch.cat([x, x], -1)
    and split into (x1, x2) by chunk, reversible coupling written by hand (y1 = x1 + Attn(LN(x2)),
    y2 = x2 + FF(LN(y1))), the feed-forward applied to chunks of the sequence (apply_chunking_to_forward:
    chunk, the same module on each, cat), and the two halves concatenated and averaged back at the end."""

    def __init__(self, vocab=256, d=64, heads=4, layers=3, axial=(8, 8), ax_dims=(16, 48)):
        super().__init__()
        self.axial = axial
        self.emb = nn.Embedding(vocab, d)
        self.ax0 = nn.Parameter(torch.randn(1, axial[0], 1, ax_dims[0]) * 0.02)
        self.ax1 = nn.Parameter(torch.randn(1, 1, axial[1], ax_dims[1]) * 0.02)
        self.attn = nn.ModuleList([LocalAttn(d, heads) for _ in range(layers)])
        self.ln_a = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
        self.ln_f = nn.ModuleList([nn.LayerNorm(d) for _ in range(layers)])
        self.ff = nn.ModuleList([nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Linear(2 * d, d))
                                 for _ in range(layers)])
        self.out_ln = nn.LayerNorm(2 * d)
        self.head = nn.Linear(2 * d, vocab)

    def forward(self, input_ids):
        B, L = input_ids.shape
        pe = torch.cat([self.ax0.expand(B, self.axial[0], self.axial[1], -1),
                        self.ax1.expand(B, self.axial[0], self.axial[1], -1)], dim=-1).reshape(B, L, -1)
        x = F.dropout(self.emb(input_ids) + pe, 0.05, self.training)
        x = torch.cat([x, x], dim=-1)
        x1, x2 = torch.chunk(x, 2, dim=-1)
        for attn, la, lf, ff in zip(self.attn, self.ln_a, self.ln_f, self.ff):
            y1 = x1 + attn(la(x2))
            h = lf(y1)
            y2 = x2 + torch.cat([ff(c) for c in h.chunk(4, dim=1)], dim=1)
            x1, x2 = y1, y2
        return self.head(self.out_ln(torch.cat([x1, x2], dim=-1)))


# ----------------------------------------------------------------------------- Universal transformer + ACT

def timing_signal(length, channels, min_ts=1.0, max_ts=1.0e4):
    position = torch.arange(length, dtype=torch.float)
    num = channels // 2
    inc = math.log(float(max_ts) / float(min_ts)) / max(num - 1, 1)
    inv = min_ts * torch.exp(torch.arange(num, dtype=torch.float) * -inc)
    scaled = position.unsqueeze(1) * inv.unsqueeze(0)
    return torch.cat([torch.sin(scaled), torch.cos(scaled)], dim=1).unsqueeze(0)


class ACTUniversal(nn.Module):
    """Universal transformer with adaptive computation time: one shared self-attention + transition
    layer applied max_hop = 5 times; before each hop the timing signal (a buffer sliced to L) and the hop's
    position signal (a buffer indexed by the hop, unsqueeze + repeat over L) are added; sigmoid halting
    probabilities, still_running / new_halted masks from comparisons with the threshold cast to float,
    remainders and n_updates accumulated, and the state an update-weighted running mix
    (state * w + previous * (1 - w)); a torch.where on the halting probability picks the final state; the
    ponder cost (n_updates + remainders).mean() is a second output."""

    def __init__(self, vocab=256, d=64, heads=4, max_hop=5, threshold=0.9):
        super().__init__()
        self.max_hop, self.threshold = max_hop, threshold
        self.emb = nn.Embedding(vocab, d)
        self.register_buffer("timing", timing_signal(128, d))
        self.register_buffer("position", timing_signal(max_hop, d))
        self.attn = nn.MultiheadAttention(d, heads, dropout=0.1, batch_first=True)
        self.ln1 = nn.LayerNorm(d); self.ln2 = nn.LayerNorm(d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.ReLU(), nn.Dropout(0.1), nn.Linear(2 * d, d))
        self.p = nn.Linear(d, 1)
        self.p.bias.data.fill_(1.0)
        self.head = nn.Linear(d, vocab)

    def fn(self, x):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.ff(self.ln2(x))

    def forward(self, input_ids):
        state = self.emb(input_ids)
        B, L, d = state.shape
        halting = torch.zeros(B, L, dtype=state.dtype, device=state.device)
        remainders = torch.zeros_like(halting)
        n_updates = torch.zeros_like(halting)
        previous = torch.zeros_like(state)
        for step in range(self.max_hop):
            state = state + self.timing[:, :L, :].type_as(state)
            state = state + self.position[:, step, :].unsqueeze(1).repeat(1, L, 1).type_as(state)
            p = torch.sigmoid(self.p(state)).squeeze(-1)
            still_running = (halting < 1.0).float()
            new_halted = (halting + p * still_running > self.threshold).float() * still_running
            still_running = (halting + p * still_running <= self.threshold).float() * still_running
            halting = halting + p * still_running
            remainders = remainders + new_halted * (1 - halting)
            halting = halting + new_halted * remainders
            n_updates = n_updates + still_running + new_halted
            w = p * still_running + new_halted * remainders
            state = self.fn(state)
            previous = state * w.unsqueeze(-1) + previous * (1 - w.unsqueeze(-1))
        out = torch.where((halting > 0).unsqueeze(-1), previous, state)
        return self.head(out), (n_updates + remainders).mean()


# ----------------------------------------------------------------------------- ViT with GLU / QK-norm / LayerScale

def drop_path(x, drop_prob: float = 0.0, training: bool = False):
    """The older timm drop_path: keep_prob + torch.rand per sample, floor_, x.div(keep_prob) * mask."""
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = keep_prob + torch.rand(shape, dtype=x.dtype, device=x.device)
    random_tensor.floor_()
    return x.div(keep_prob) * random_tensor


class DropPath(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.drop_prob = p

    def forward(self, x):
        return drop_path(x, self.drop_prob, self.training)


class LayerScale(nn.Module):
    def __init__(self, dim, init_values=1e-5, inplace=False):
        super().__init__()
        self.inplace = inplace
        self.gamma = nn.Parameter(init_values * torch.ones(dim))

    def forward(self, x):
        return x.mul_(self.gamma) if self.inplace else x * self.gamma


class GluMlp(nn.Module):
    """timm's GluMlp: fc1 to 2 hidden, chunk(2, -1), act(x1) * x2 (SiLU: SwiGLU, GELU: GeGLU), a norm."""

    def __init__(self, d, hidden, act):
        super().__init__()
        self.fc1 = nn.Linear(d, hidden * 2); self.act = act; self.norm = nn.LayerNorm(hidden)
        self.fc2 = nn.Linear(hidden, d); self.drop = nn.Dropout(0.1)

    def forward(self, x):
        x1, x2 = self.fc1(x).chunk(2, dim=-1)
        return self.drop(self.fc2(self.norm(self.act(x1) * x2)))


class QKNormAttention(nn.Module):
    def __init__(self, d, heads, p=0.1):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.qkv = nn.Linear(d, 3 * d)
        self.q_norm = nn.LayerNorm(self.hd); self.k_norm = nn.LayerNorm(self.hd)
        self.attn_drop = nn.Dropout(p)
        self.proj = nn.Linear(d, d); self.proj_drop = nn.Dropout(p)
        self.fused_attn = True

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.h, self.hd).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        q, k = self.q_norm(q), self.k_norm(k)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.0)
        else:
            attn = (q * self.hd ** -0.5) @ k.transpose(-2, -1)
            x = self.attn_drop(attn.softmax(dim=-1)) @ v
        return self.proj_drop(self.proj(x.transpose(1, 2).reshape(B, N, C)))


class GluBlock(nn.Module):
    def __init__(self, d, heads, act, dp, inplace_ls):
        super().__init__()
        self.norm1 = nn.LayerNorm(d); self.attn = QKNormAttention(d, heads)
        self.ls1 = LayerScale(d, 0.1, inplace_ls); self.drop_path1 = DropPath(dp) if dp > 0 else nn.Identity()
        self.norm2 = nn.LayerNorm(d); self.mlp = GluMlp(d, 2 * d, act)
        self.ls2 = LayerScale(d, 0.1, inplace_ls); self.drop_path2 = DropPath(dp) if dp > 0 else nn.Identity()

    def forward(self, x):
        x = x + self.drop_path1(self.ls1(self.attn(self.norm1(x))))
        return x + self.drop_path2(self.ls2(self.mlp(self.norm2(x))))


class VitGlu(nn.Module):
    """A timm-style ViT of today: conv patch embedding flattened and transposed, a class token and 4
    register tokens (parameters expanded over the batch and concatenated), a position embedding added to
    the patches only, blocks with QK-norm (LayerNorm on q and k per head) and
    F.scaled_dot_product_attention with dropout_p = 0.1 while training, qkv.unbind(0), LayerScale (one
    block in place: x.mul_(gamma)), the older DropPath (torch.rand per sample, floor_, div(keep_prob)),
    SwiGLU then GeGLU GluMlps by chunk(2, -1), nn.Identity placeholders, a torch.jit.is_scripting guard,
    avg pooling over the non-prefix tokens, fc_norm, head_drop and the head."""

    def __init__(self, img, patch=8, d=64, heads=4, depth=4, classes=10, regs=4):
        super().__init__()
        self.num_prefix_tokens = 1 + regs
        self.grad_checkpointing = False
        self.patch_embed = nn.Conv2d(3, d, patch, patch)
        n = (img // patch) ** 2
        self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
        self.reg_token = nn.Parameter(torch.randn(1, regs, d) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, n, d) * 0.02)
        self.pos_drop = nn.Dropout(0.1)
        self.norm_pre = nn.Identity()
        acts = [nn.SiLU(), nn.GELU(), nn.SiLU(), nn.GELU()]
        self.blocks = nn.Sequential(*[GluBlock(d, heads, acts[i], 0.1 * i / depth, inplace_ls=(i == 2))
                                      for i in range(depth)])
        self.norm = nn.Identity()
        self.fc_norm = nn.LayerNorm(d)
        self.head_drop = nn.Dropout(0.1)
        self.head = nn.Linear(d, classes)

    def forward_features(self, x):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = x + self.pos_embed
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), self.reg_token.expand(x.shape[0], -1, -1), x],
                      dim=1)
        x = self.norm_pre(self.pos_drop(x))
        if self.grad_checkpointing and not torch.jit.is_scripting():
            raise RuntimeError("not used here")
        x = self.blocks(x)
        return self.norm(x)

    def forward(self, x):
        x = self.forward_features(x)
        x = x[:, self.num_prefix_tokens:].mean(dim=1)
        return self.head(self.head_drop(self.fc_norm(x)))


# ----------------------------------------------------------------------------- Mistral-like GQA with a KV cache

def repeat_kv(hidden, n_rep):
    """HF's repeat_kv: (B, kvh, L, hd) -> (B, kvh * n_rep, L, hd) by expand + reshape."""
    b, kvh, L, hd = hidden.shape
    if n_rep == 1:
        return hidden
    hidden = hidden[:, :, None, :, :].expand(b, kvh, n_rep, L, hd)
    return hidden.reshape(b, kvh * n_rep, L, hd)


class GQAttention(nn.Module):
    def __init__(self, d, heads, kv_heads, use_interleave):
        super().__init__()
        self.h, self.kvh, self.hd = heads, kv_heads, d // heads
        self.use_interleave = use_interleave
        self.q_proj = nn.Linear(d, heads * self.hd, bias=False)
        self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
        self.o_proj = nn.Linear(heads * self.hd, d, bias=False)

    def forward(self, x, cos, sin, mask, past_kv=None):
        B, L, _ = x.shape
        q = self.q_proj(x).view(B, L, self.h, self.hd).transpose(1, 2)
        k = self.k_proj(x).view(B, L, self.kvh, self.hd).transpose(1, 2)
        v = self.v_proj(x).view(B, L, self.kvh, self.hd).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        if past_kv is not None:
            k = torch.cat([past_kv[0], k], dim=2)
            v = torch.cat([past_kv[1], v], dim=2)
        present = (k, v)
        if self.use_interleave:
            k = k.repeat_interleave(self.h // self.kvh, dim=1)
            v = v.repeat_interleave(self.h // self.kvh, dim=1)
        else:
            k, v = repeat_kv(k, self.h // self.kvh), repeat_kv(v, self.h // self.kvh)
        o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=0.1 if self.training else 0.0)
        return self.o_proj(o.transpose(1, 2).contiguous().view(B, L, -1)), present


class MistralLayer(nn.Module):
    def __init__(self, d, heads, kv_heads, use_interleave):
        super().__init__()
        self.input_layernorm = RMSNorm(d); self.post_attention_layernorm = RMSNorm(d)
        self.self_attn = GQAttention(d, heads, kv_heads, use_interleave)
        self.gate_proj = nn.Linear(d, 2 * d, bias=False); self.up_proj = nn.Linear(d, 2 * d, bias=False)
        self.down_proj = nn.Linear(2 * d, d, bias=False)

    def forward(self, x, cos, sin, mask, past_kv=None):
        a, present = self.self_attn(self.input_layernorm(x), cos, sin, mask, past_kv)
        x = x + a
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h)), present


class MistralCache(nn.Module):
    """A Mistral-like decoder continuing a cached prompt: the prompt's keys and values computed under
    torch.no_grad() (past_key_values), concatenated before the new tokens' keys and values; position ids
    offset by the past length (torch.arange(P, P + L).unsqueeze(0).expand(B, -1)), cos/sin looked up by
    advanced indexing with them; grouped-query attention with 4 query heads on 2 kv heads (HF's repeat_kv:
    [:, :, None].expand + reshape) and multi-query attention with 1 kv head by repeat_interleave; a float
    sliding-window causal mask built with torch.full(finfo.min), triu and tril(diagonal=-window) and
    masked_fill; F.scaled_dot_product_attention with that float attn_mask and dropout_p = 0.1 while
    training; SwiGLU; an untied head."""

    def __init__(self, vocab=256, d=64, heads=4, window=24, max_pos=256):
        super().__init__()
        self.window = window
        self.embed_tokens = nn.Embedding(vocab, d)
        self.layers = nn.ModuleList([MistralLayer(d, heads, 2, False), MistralLayer(d, heads, 1, True),
                                     MistralLayer(d, heads, 2, False)])
        self.norm = RMSNorm(d)
        self.lm_head = nn.Linear(d, vocab, bias=False)
        hd = d // heads
        inv = 1.0 / (10000 ** (torch.arange(0, hd, 2).float() / hd))
        freqs = torch.outer(torch.arange(max_pos).float(), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos(), persistent=False)
        self.register_buffer("sin_cached", emb.sin(), persistent=False)

    def mask(self, L, past, dtype, device):
        total = past + L
        m = torch.full((L, total), torch.finfo(dtype).min, dtype=dtype, device=device)
        qpos = torch.arange(past, total, device=device).view(L, 1)
        kpos = torch.arange(total, device=device).view(1, total)
        allowed = (kpos <= qpos) & (kpos > qpos - self.window)
        m = m.masked_fill(allowed, 0.0)
        return m[None, None]

    def run(self, ids, past_len, past):
        B, L = ids.shape
        position_ids = torch.arange(past_len, past_len + L, dtype=torch.long, device=ids.device).unsqueeze(0)
        position_ids = position_ids.expand(B, -1)
        cos, sin = self.cos_cached[position_ids], self.sin_cached[position_ids]
        x = self.embed_tokens(ids)
        mask = self.mask(L, past_len, x.dtype, x.device)
        presents = []
        for i, layer in enumerate(self.layers):
            x, present = layer(x, cos, sin, mask, None if past is None else past[i])
            presents.append(present)
        return x, presents

    def forward(self, prompt_ids, input_ids):
        with torch.no_grad():
            _, past = self.run(prompt_ids, 0, None)
        x, _ = self.run(input_ids, prompt_ids.shape[1], past)
        return self.lm_head(self.norm(x))


# ----------------------------------------------------------------------------- T5-style encoder-decoder

class T5LayerNorm(nn.Module):
    def __init__(self, d, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d)); self.variance_epsilon = eps

    def forward(self, h):
        variance = h.to(torch.float32).pow(2).mean(-1, keepdim=True)
        h = h * torch.rsqrt(variance + self.variance_epsilon)
        return self.weight * h


class T5Attn(nn.Module):
    def __init__(self, d, heads):
        super().__init__()
        self.h, self.hd = heads, d // heads
        self.q = nn.Linear(d, d, bias=False); self.k = nn.Linear(d, d, bias=False)
        self.v = nn.Linear(d, d, bias=False); self.o = nn.Linear(d, d, bias=False)

    def forward(self, x, kv, mask):
        B = x.shape[0]
        shape = lambda t: t.view(B, -1, self.h, self.hd).transpose(1, 2)
        q, k, v = shape(self.q(x)), shape(self.k(kv)), shape(self.v(kv))
        scores = torch.matmul(q, k.transpose(3, 2)) + mask          # T5: no 1/sqrt(d) scaling
        w = F.dropout(F.softmax(scores.float(), dim=-1).type_as(scores), p=0.1, training=self.training)
        return self.o(torch.matmul(w, v).transpose(1, 2).contiguous().view(B, -1, self.h * self.hd))


class T5Block(nn.Module):
    def __init__(self, d, heads, cross):
        super().__init__()
        self.ln0 = T5LayerNorm(d); self.sa = T5Attn(d, heads)
        self.cross = cross
        if cross:
            self.ln1 = T5LayerNorm(d); self.ca = T5Attn(d, heads)
        self.ln2 = T5LayerNorm(d)
        self.wi = nn.Linear(d, 2 * d, bias=False); self.wo = nn.Linear(2 * d, d, bias=False)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, mask, enc=None, enc_mask=None):
        h = self.ln0(x)
        x = x + self.drop(self.sa(h, h, mask))
        if self.cross:
            x = x + self.drop(self.ca(self.ln1(x), enc, enc_mask))
        return x + self.drop(self.wo(self.drop(F.relu(self.wi(self.ln2(x))))))


class T5EncDec(nn.Module):
    """A T5-style encoder-decoder as HF writes it: one shared embedding for encoder and decoder inputs,
    T5LayerNorm (variance in float32), unscaled attention scores, the encoder's extended padding mask
    reused by the decoder's cross-attention, a causal decoder mask from torch.tril(ones) combined with
    the decoder padding into (1 - m) * finfo.min, the decoder input from the labels shifted right
    (torch.cat of a start-token column new_full'ed and labels[:, :-1], then masked_fill of -100 by the pad
    id), the last hidden state scaled by d_model ** -0.5 before the tied LM head (F.linear with the shared
    weight), and F.cross_entropy(logits.view(-1, V), labels.view(-1), ignore_index=-100) inside the
    model; returns (loss, logits)."""

    def __init__(self, vocab=256, d=64, heads=4, layers=2):
        super().__init__()
        self.d = d
        self.shared = nn.Embedding(vocab, d)
        self.encoder = nn.ModuleList([T5Block(d, heads, False) for _ in range(layers)])
        self.decoder = nn.ModuleList([T5Block(d, heads, True) for _ in range(layers)])
        self.enc_ln = T5LayerNorm(d); self.dec_ln = T5LayerNorm(d)
        self.drop = nn.Dropout(0.1)

    def forward(self, input_ids, attention_mask, labels):
        dtype = self.shared.weight.dtype
        enc_ext = extended_mask(attention_mask, dtype)
        x = self.drop(self.shared(input_ids))
        for blk in self.encoder:
            x = blk(x, enc_ext)
        enc = self.drop(self.enc_ln(x))
        start = labels.new_full((labels.shape[0], 1), 0)
        dec_in = torch.cat([start, labels[:, :-1]], dim=-1)
        dec_in = dec_in.masked_fill(dec_in == -100, 0)
        T = dec_in.shape[1]
        causal = torch.tril(torch.ones(T, T, device=dec_in.device))
        dec_mask = causal[None, None, :, :] * (dec_in != 0).to(dtype)[:, None, None, :]
        dec_mask[:, :, :, 0] = 1.0
        dec_ext = (1.0 - dec_mask) * torch.finfo(dtype).min
        y = self.drop(self.shared(dec_in))
        for blk in self.decoder:
            y = blk(y, dec_ext, enc, enc_ext)
        y = self.drop(self.dec_ln(y)) * (self.d ** -0.5)
        logits = F.linear(y, self.shared.weight)
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=-100)
        return loss, logits


# ----------------------------------------------------------------------------- captioner on nn.MultiheadAttention

class Captioner(nn.Module):
    """A sequence-first (batch_first=False) captioner on nn.MultiheadAttention: a small CNN's feature map
    flattened and permuted to (HW, B, C); the text embeddings transposed to (L, B, E) plus a sinusoid
    buffer sliced to L; masked self-attention with a float causal mask from triu(full(-inf), 1) and a float
    key padding mask (masked_fill of -inf where ids == 0), need_weights=False; cross-attention with kdim
    = vdim = C != E (separate q/k/v projection weights) and add_bias_kv=True, add_zero_attn=True, dropout
    0.1, need_weights=True with average_attn_weights=False (the weights returned as a second output);
    a post-norm feed-forward; logits transposed back to (B, L, V)."""

    def __init__(self, vocab=256, E=64, C=48, heads=4, layers=2):
        super().__init__()
        self.cnn = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
                                 nn.Conv2d(32, C, 3, 2, 1), nn.BatchNorm2d(C), nn.ReLU(inplace=True),
                                 nn.MaxPool2d(2))
        self.emb = nn.Embedding(vocab, E, padding_idx=0)
        self.register_buffer("pe", timing_signal(64, E).transpose(0, 1))      # 64, 1, E
        self.self_attn = nn.ModuleList([nn.MultiheadAttention(E, heads, dropout=0.1) for _ in range(layers)])
        self.cross_attn = nn.ModuleList([nn.MultiheadAttention(E, heads, dropout=0.1, kdim=C, vdim=C,
                                                               add_bias_kv=True, add_zero_attn=True)
                                         for _ in range(layers)])
        self.n1 = nn.ModuleList([nn.LayerNorm(E) for _ in range(layers)])
        self.n2 = nn.ModuleList([nn.LayerNorm(E) for _ in range(layers)])
        self.n3 = nn.ModuleList([nn.LayerNorm(E) for _ in range(layers)])
        self.ff = nn.ModuleList([nn.Sequential(nn.Linear(E, 2 * E), nn.ReLU(), nn.Dropout(0.1), nn.Linear(2 * E, E))
                                 for _ in range(layers)])
        self.out = nn.Linear(E, vocab)

    def forward(self, images, ids):
        f = self.cnn(images)
        mem = f.flatten(2).permute(2, 0, 1)                                    # S, B, C
        L = ids.shape[1]
        x = self.emb(ids).transpose(0, 1) * math.sqrt(self.emb.embedding_dim) + self.pe[:L]
        causal = torch.triu(torch.full((L, L), float("-inf"), device=ids.device), diagonal=1)
        pad = torch.zeros(ids.shape, dtype=x.dtype, device=ids.device).masked_fill(ids == 0, float("-inf"))
        weights = []
        for sa, ca, n1, n2, n3, ff in zip(self.self_attn, self.cross_attn, self.n1, self.n2, self.n3, self.ff):
            x = n1(x + sa(x, x, x, attn_mask=causal, key_padding_mask=pad, need_weights=False)[0])
            a, w = ca(x, mem, mem, need_weights=True, average_attn_weights=False)
            weights.append(w)
            x = n2(x + a)
            x = n3(x + ff(x))
        return self.out(x).transpose(0, 1), torch.stack(weights, 0)


# ----------------------------------------------------------------------------- timm-style convnets

def make_divisible(v, divisor=8, min_value=None, round_limit=0.9):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < round_limit * v:
        new_v += divisor
    return new_v


class SqueezeExcite(nn.Module):
    """timm/MobileNetV3 SE: adaptive_avg_pool2d(x, 1) as x.mean((2, 3), keepdim=True), reduce conv,
    hard-swish, expand conv, hard-sigmoid gate."""

    def __init__(self, c, rd_ratio=0.25):
        super().__init__()
        rd = make_divisible(c * rd_ratio)
        self.conv_reduce = nn.Conv2d(c, rd, 1); self.act1 = nn.Hardswish()
        self.conv_expand = nn.Conv2d(rd, c, 1); self.gate = nn.Hardsigmoid()

    def forward(self, x):
        s = self.act1(self.conv_reduce(x.mean((2, 3), keepdim=True)))
        return x * self.gate(self.conv_expand(s))


class Residual(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x) + x


class SelectAdaptivePool2d(nn.Module):
    def __init__(self, flatten=True):
        super().__init__()
        self.flatten = nn.Flatten(1) if flatten else nn.Identity()

    def forward(self, x):
        return self.flatten(F.adaptive_avg_pool2d(x, 1))


class ConvMixer(nn.Module):
    """timm's ConvMixer: a patch conv (kernel = stride = 4), GELU, BatchNorm; blocks of Residual(depthwise
    conv with padding="same" — kernel 5, and one block with an even kernel 4, where PyTorch pads
    asymmetrically — GELU, BN), pointwise conv, GELU, BN; the last block's pointwise conv followed by a
    hard-swish SE; SelectAdaptivePool2d (F.adaptive_avg_pool2d(x, 1) then nn.Flatten), head_drop and a
    Linear head, an nn.Identity where timm has a norm, and a torch.jit.is_scripting guard."""

    def __init__(self, dim=64, depth=5, patch=4, classes=10):
        super().__init__()
        self.grad_checkpointing = False
        self.stem = nn.Sequential(nn.Conv2d(3, dim, patch, patch), nn.GELU(), nn.BatchNorm2d(dim))
        blocks = []
        for i in range(depth):
            k = 4 if i == 2 else 5
            blocks.append(nn.Sequential(
                Residual(nn.Sequential(nn.Conv2d(dim, dim, k, groups=dim, padding="same"), nn.GELU(),
                                       nn.BatchNorm2d(dim))),
                nn.Conv2d(dim, dim, 1), nn.GELU(), nn.BatchNorm2d(dim),
                SqueezeExcite(dim) if i == depth - 1 else nn.Identity()))
        self.blocks = nn.Sequential(*blocks)
        self.norm = nn.Identity()
        self.pooling = SelectAdaptivePool2d(flatten=True)
        self.head_drop = nn.Dropout(0.2)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.stem(x)
        if self.grad_checkpointing and not torch.jit.is_scripting():
            raise RuntimeError("not used here")
        x = self.norm(self.blocks(x))
        return self.head(self.head_drop(self.pooling(x)))


class Pooling(nn.Module):
    def __init__(self, pool_size=3):
        super().__init__()
        self.pool = nn.AvgPool2d(pool_size, stride=1, padding=pool_size // 2, count_include_pad=False)

    def forward(self, x):
        return self.pool(x) - x


class ConvMlp(nn.Module):
    def __init__(self, c, hidden, bn):
        super().__init__()
        self.fc1 = nn.Conv2d(c, hidden, 1); self.norm1 = nn.BatchNorm2d(hidden) if bn else nn.Identity()
        self.act = nn.GELU(); self.fc2 = nn.Conv2d(hidden, c, 1)
        self.norm2 = nn.BatchNorm2d(c) if bn else nn.Identity(); self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return self.drop(self.norm2(self.fc2(self.drop(self.act(self.norm1(self.fc1(x)))))))


class PoolFormerBlock(nn.Module):
    """PoolFormer (GroupNorm(1, C) norms, layer_scale.unsqueeze(-1).unsqueeze(-1)) or EfficientFormer's
    Meta4D (no norm before the pool, BatchNorm'd ConvMlp, LayerScale2d as gamma.view(1, -1, 1, 1))."""

    def __init__(self, c, dp, meta4d):
        super().__init__()
        self.meta4d = meta4d
        self.norm1 = nn.Identity() if meta4d else nn.GroupNorm(1, c)
        self.token_mixer = Pooling(3)
        self.norm2 = nn.Identity() if meta4d else nn.GroupNorm(1, c)
        self.mlp = ConvMlp(c, 4 * c, bn=meta4d)
        self.layer_scale_1 = nn.Parameter(1e-2 * torch.ones(c))
        self.layer_scale_2 = nn.Parameter(1e-2 * torch.ones(c))
        self.drop_path = DropPath(dp) if dp > 0 else nn.Identity()

    def forward(self, x):
        if self.meta4d:
            x = x + self.drop_path(self.layer_scale_1.view(1, -1, 1, 1) * self.token_mixer(x))
            return x + self.drop_path(self.layer_scale_2.view(1, -1, 1, 1) * self.mlp(x))
        x = x + self.drop_path(self.layer_scale_1.unsqueeze(-1).unsqueeze(-1) * self.token_mixer(self.norm1(x)))
        return x + self.drop_path(self.layer_scale_2.unsqueeze(-1).unsqueeze(-1) * self.mlp(self.norm2(x)))


class BiasAttention(nn.Module):
    """EfficientFormer's Attention: q/k/v from one Linear split by sizes (key_dim, key_dim, 2 * key_dim per
    head), attention_biases[:, attention_bias_idxs] (a parameter indexed by an int64 buffer of |dy|*W+|dx|)."""

    def __init__(self, d, res, heads=4, key_dim=16):
        super().__init__()
        self.h, self.kd, self.vd = heads, key_dim, 2 * key_dim
        self.scale = key_dim ** -0.5
        self.qkv = nn.Linear(d, heads * (2 * key_dim + self.vd))
        self.proj = nn.Linear(heads * self.vd, d)
        pos = torch.stack(torch.meshgrid(torch.arange(res), torch.arange(res), indexing="ij")).flatten(1)
        rel = (pos[..., :, None] - pos[..., None, :]).abs()
        rel = (rel[0] * res) + rel[1]
        self.attention_biases = nn.Parameter(torch.zeros(heads, res * res))
        self.register_buffer("attention_bias_idxs", rel)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, self.h, -1).permute(0, 2, 1, 3)
        q, k, v = qkv.split([self.kd, self.kd, self.vd], dim=3)
        attn = (q @ k.transpose(-2, -1)) * self.scale + self.attention_biases[:, self.attention_bias_idxs]
        x = (attn.softmax(dim=-1) @ v).transpose(1, 2).reshape(B, N, self.h * self.vd)
        return self.proj(x)


class PoolEfficientFormer(nn.Module):
    """Two PoolFormer stages (AvgPool2d(3, 1, 1, count_include_pad=False)(x) - x as the token mixer,
    GroupNorm(1, C), LayerScale as .unsqueeze(-1).unsqueeze(-1), DropPath), a stride-2 conv downsample,
    an EfficientFormer Meta4D stage (BatchNorm ConvMlp), then Flat (flatten(2).transpose(1, 2)) and a
    Meta3D block (LayerNorm, attention with attention_biases[:, idxs]), and EfficientFormer's head and
    distillation head averaged ((head(x) + head_dist(x)) / 2) in training too."""

    def __init__(self, img, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU())
        self.stage1 = nn.Sequential(PoolFormerBlock(32, 0.0, False), PoolFormerBlock(32, 0.05, False))
        self.down1 = nn.Conv2d(32, 48, 3, 2, 1)
        self.stage2 = nn.Sequential(PoolFormerBlock(48, 0.1, False), PoolFormerBlock(48, 0.1, True))
        self.down2 = nn.Sequential(nn.Conv2d(48, 64, 3, 2, 1), nn.BatchNorm2d(64))
        res = img // 16
        self.norm1 = nn.LayerNorm(64); self.token_mixer = BiasAttention(64, res)
        self.norm2 = nn.LayerNorm(64)
        self.mlp = nn.Sequential(nn.Linear(64, 128), nn.GELU(), nn.Linear(128, 64))
        self.ls1 = LayerScale(64, 1e-2); self.ls2 = LayerScale(64, 1e-2)
        self.norm = nn.LayerNorm(64)
        self.head = nn.Linear(64, classes); self.head_dist = nn.Linear(64, classes)

    def forward(self, x):
        x = self.down1(self.stage1(self.stem(x)))
        x = self.down2(self.stage2(x))
        x = x.flatten(2).transpose(1, 2)
        x = x + drop_path(self.ls1(self.token_mixer(self.norm1(x))), 0.1, self.training)
        x = x + drop_path(self.ls2(self.mlp(self.norm2(x))), 0.1, self.training)
        x = self.norm(x).mean(dim=1)
        return (self.head(x) + self.head_dist(x)) / 2


class MBConvPre(nn.Module):
    """CoAtNet's MBConv: pre-norm BatchNorm, 1x1 expand, depthwise 3x3 (stride 2 in the first of a
    stage), hard-swish, SE, 1x1 project; the shortcut downsampled by F.max_pool2d(3, 2, 1) then a 1x1
    conv when the stride or width changes, else nn.Identity."""

    def __init__(self, cin, cout, stride):
        super().__init__()
        mid = cin * 4
        self.pre_norm = nn.BatchNorm2d(cin)
        self.conv1 = nn.Conv2d(cin, mid, 1, bias=False); self.bn1 = nn.BatchNorm2d(mid)
        self.conv2 = nn.Conv2d(mid, mid, 3, stride, 1, groups=mid, bias=False); self.bn2 = nn.BatchNorm2d(mid)
        self.act = nn.Hardswish()
        self.se = SqueezeExcite(mid, 0.0625)
        self.conv3 = nn.Conv2d(mid, cout, 1)
        self.stride = stride
        self.shortcut_conv = nn.Conv2d(cin, cout, 1) if (stride != 1 or cin != cout) else nn.Identity()

    def forward(self, x):
        sc = x
        if self.stride != 1:
            sc = F.max_pool2d(sc, 3, self.stride, 1)
        sc = self.shortcut_conv(sc)
        h = self.pre_norm(x)
        h = self.act(self.bn1(self.conv1(h)))
        h = self.act(self.bn2(self.conv2(h)))
        return sc + self.conv3(self.se(h))


class CoAtTransformer(nn.Module):
    """CoAtNet's transformer block on a 2D map: the first of a stage downsamples both the shortcut (max
    pool + 1x1 conv) and the attention input (max pool); x.flatten(2).transpose(1, 2) to tokens, pre-LN
    multi-head attention written with q, k, v = qkv.chunk(3, -1), reshaped back with transpose(1, 2).reshape
    to (B, C, H, W) before the residual add; a pre-LN MLP on the tokens; back to a map for the next block."""

    def __init__(self, cin, cout, heads, down):
        super().__init__()
        self.down, self.h = down, heads
        self.proj = nn.Conv2d(cin, cout, 1) if down else nn.Identity()
        self.norm1 = nn.LayerNorm(cin)
        self.qkv = nn.Linear(cin, 3 * cout); self.o = nn.Linear(cout, cout)
        self.norm2 = nn.LayerNorm(cout)
        self.mlp = nn.Sequential(nn.Linear(cout, 2 * cout), nn.GELU(), nn.Linear(2 * cout, cout))

    def forward(self, x):
        if self.down:
            x = F.max_pool2d(x, 3, 2, 1)
        sc = self.proj(x)
        B, C, H, W = x.shape
        t = self.norm1(x.flatten(2).transpose(1, 2))
        q, k, v = self.qkv(t).chunk(3, dim=-1)
        split = lambda z: z.reshape(B, H * W, self.h, -1).transpose(1, 2)
        q, k, v = split(q), split(k), split(v)
        a = torch.softmax(q @ k.transpose(-2, -1) * q.shape[-1] ** -0.5, -1) @ v
        a = self.o(a.transpose(1, 2).reshape(B, H * W, -1))
        x = sc + a.transpose(1, 2).reshape(B, -1, H, W)
        t = x.flatten(2).transpose(1, 2)
        t = t + self.mlp(self.norm2(t))
        return t.transpose(1, 2).reshape(B, -1, H, W)


class CoAtNet(nn.Module):
    """CoAtNet-lite: a conv stem, two MBConv stages (hard-swish, hard-sigmoid SE, max-pooled shortcuts),
    two transformer stages (CoAtTransformer), F.adaptive_avg_pool2d(x, 1).flatten(1) and a head."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.GELU())
        self.s1 = nn.Sequential(MBConvPre(16, 24, 2), MBConvPre(24, 24, 1))
        self.s2 = nn.Sequential(MBConvPre(24, 32, 2), MBConvPre(32, 32, 1))
        self.s3 = nn.Sequential(CoAtTransformer(32, 48, 4, True), CoAtTransformer(48, 48, 4, False))
        self.s4 = nn.Sequential(CoAtTransformer(48, 64, 4, True))
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        x = self.s4(self.s3(self.s2(self.s1(self.stem(x)))))
        return self.head(F.adaptive_avg_pool2d(x, 1).flatten(1))


NAMES = ["bert_prefix", "neox_gptj", "deberta", "albert", "funnel", "reformer", "act_ut", "vit_glu", "mistral_cache",
         "t5_encdec", "captioner", "convmixer", "poolformer", "coatnet"]


def padded_mask(B, L, g):
    """1 for tokens, 0 for padding at the tail (at least half the sequence is kept)."""
    lengths = torch.randint(L // 2, L + 1, (B,), generator=g)
    lengths[0] = L
    return (torch.arange(L)[None, :] < lengths[:, None]).long()


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    half = max(32, (S // 2) // 32 * 32)     # 32 at the default --image 96
    img = max(32, S // 32 * 32)              # 96 at the default --image 96
    if name == "bert_prefix":
        return BertPrefix(), [common.token_ids((B, 48), 512, g), padded_mask(B, 48, g)]
    if name == "neox_gptj":
        return NeoXJ(), [common.token_ids((B, 64), 256, g)]
    if name == "deberta":
        return DeBERTa(), [common.token_ids((B, 48), 256, g), padded_mask(B, 48, g)]
    if name == "albert":
        tt = (torch.arange(40)[None, :] >= 20).long().expand(B, 40).contiguous()
        return Albert(), [common.token_ids((B, 40), 256, g), padded_mask(B, 40, g), tt]
    if name == "funnel":
        return Funnel(), [common.token_ids((B, 64), 256, g), padded_mask(B, 64, g)]
    if name == "reformer":
        return Reformer(), [common.token_ids((B, 64), 256, g)]
    if name == "act_ut":
        return ACTUniversal(), [common.token_ids((B, 32), 256, g)]
    if name == "vit_glu":
        return VitGlu(half * 2), [common.float_input((B, 3, half * 2, half * 2), dtype, g)]
    if name == "mistral_cache":
        return MistralCache(), [common.token_ids((B, 16), 256, g), common.token_ids((B, 48), 256, g)]
    if name == "t5_encdec":
        ids = common.token_ids((B, 40), 255, g) + 1
        m = padded_mask(B, 40, g)
        ids = ids * m
        labels = common.token_ids((B, 24), 255, g) + 1
        lm = padded_mask(B, 24, g)
        labels = labels.masked_fill(lm == 0, -100)
        return T5EncDec(), [ids, m, labels]
    if name == "captioner":
        ids = common.token_ids((B, 20), 255, g) + 1
        return Captioner(), [common.float_input((B, 3, half * 2, half * 2), dtype, g), ids * padded_mask(B, 20, g)]
    if name == "convmixer":
        return ConvMixer(), [common.float_input((B, 3, half * 2, half * 2), dtype, g)]
    if name == "poolformer":
        return PoolEfficientFormer(img), [common.float_input((B, 3, img, img), dtype, g)]
    if name == "coatnet":
        return CoAtNet(), [common.float_input((B, 3, half * 2, half * 2), dtype, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen7.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
