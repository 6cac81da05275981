#!/usr/bin/env python3
"""unseen6.py — a sixth set of models nobody tuned rkmate for (after
tools/models/unseen.py, unseen2.py, unseen3.py, unseen4.py and unseen5.py),
all small and hand-written, each with idioms the other sets do not have: a
SegNet (max_pool2d with return_indices=True and F.max_unpool2d with those
indices and output_size, replicate-padded convs, BatchNorm with
momentum=None — a cumulative average over num_batches_tracked —, logits.max(1)
whose values and indices are both used, nll_loss with ignore_index=255
against a label buffer), a Longformer-lite (sliding-window attention by
F.pad and Tensor.unfold(2, 2w+1, 1) of keys and values, an out-of-range
window mask from two aranges, a global token attending to and attended by
everything, .contiguous() after permutes, an nn.Embedding with padding_idx),
a LoRA-finetuned transformer (frozen embedding and base Linear weights by
requires_grad_(False), low-rank A/B adapters with dropout, a hand LayerNorm
by torch.var_mean, scaled_dot_product_attention, std_mean pooling,
cross_entropy with label_smoothing against a label buffer), a triplet
metric-learning net (one circular-padded encoder on three inputs,
triplet_margin_loss, margin_ranking_loss, pairwise_distance, hardest
negatives from torch.cdist with p=1 and min over the batch, diagonal,
cosine_similarity broadcast to a matrix, cosine_embedding_loss, a dict
output), a channels_last conv net (model.to(memory_format=channels_last), the
input made channels_last in forward, a stem BatchNorm kept in eval mode in a
train-mode model by an overridden train(), depthwise-separable blocks,
nn.Unflatten, logsumexp), a hierarchical RNN (a bidirectional GRU with
batch_first=False, max over words with the argmax indices used by gather,
nn.RNN tanh with 2 layers and dropout between them, nn.LSTM with proj_size
whose final (h, c) are used, torch.cummax values and indices), an
order-statistics set pooling (torch.sort values with gradient and indices
through take_along_dim, kthvalue, median(dim), aminmax of a detached tensor,
cummin, std_mean, var_mean with correction=0, torch.max(dim) both results), a
graph net with scatter reductions (scatter_reduce amax with
include_self=False and mean into new_zeros, index_add with alpha, bucketize of
a degree buffer into an embedding, searchsorted of a detached score into a
sorted buffer indexing a parameter table, index_copy of a node subset,
take_along_dim of an argmax), a multi-loss CNN (BCE-with-logits with
pos_weight, nll_loss with ignore_index=-100, kl_div with log_target=True
against a detached teacher head, a hand focal loss by where / pow,
huber_loss, soft_margin_loss, multilabel_soft_margin_loss, poisson_nll_loss,
a tuple of three outputs), a 3-D V-Net (Conv3d with replicate padding,
InstanceNorm3d with affine, ConvTranspose3d with output_padding, leaky_relu,
elu, a hand dice loss against a mask buffer, nn.Bilinear), an audio framer
(overlapping frames by Tensor.as_strided, a Hann window buffer, log1p,
circular-padded Conv1d, a ConvTranspose1d overlap-add decoder, l1_loss), a
frozen detection backbone (torchvision.ops.FrozenBatchNorm2d, a frozen stem by
requires_grad_(False), BatchNorm2d with track_running_stats=False, a
parameter-free constant branch: a Sobel edge magnitude of the input by
F.conv2d with a buffer kernel, sigmoid and clamped-exp heads), and a DLRM
recommender (F.embedding with max_norm=1.0, which renormalises the table
rows in place in forward, bucketize of a dense feature, pairwise dot
interactions by bmm indexed with a triu_indices buffer, nn.Bilinear,
BCE-with-logits with pos_weight, an int64 and a float input).  Exported like
the zoo (tools/models/common.export), with the zoo's options, so that
`tools/bench/zoo.py --models-script tools/models/unseen6.py` runs them
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


# ----------------------------------------------------------------------------- SegNet

def conv_bn(cin, cout, mode="zeros", momentum=0.1):
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, padding_mode=mode, bias=False),
                         nn.BatchNorm2d(cout, momentum=momentum), nn.ReLU(inplace=True))


class SegNet(nn.Module):
    """SegNet: max_pool2d(return_indices=True) in the encoder, F.max_unpool2d with those indices
    (and output_size) in the decoder; replicate-padded convs; BatchNorm with momentum=None
    (cumulative average over num_batches_tracked); logits.max(1) whose values and indices are both
    used; nll_loss on log_softmax with ignore_index=255 against an int64 label buffer."""

    def __init__(self, B, S, classes=5):
        super().__init__()
        self.e1 = nn.Sequential(conv_bn(3, 16, "replicate", None), conv_bn(16, 16))
        self.e2 = nn.Sequential(conv_bn(16, 32, "replicate", None), conv_bn(32, 32))
        self.d2 = nn.Sequential(conv_bn(32, 32), conv_bn(32, 16, "replicate"))
        self.d1 = nn.Sequential(conv_bn(16, 16), nn.Conv2d(16, classes, 1))
        g = torch.Generator().manual_seed(5)
        lab = torch.randint(0, classes, (B, S, S), generator=g)
        lab[:, : S // 8] = 255
        self.register_buffer("labels", lab)

    def forward(self, x):
        h1 = self.e1(x)
        p1, i1 = F.max_pool2d(h1, 2, 2, return_indices=True)
        h2 = self.e2(p1)
        p2, i2 = F.max_pool2d(h2, 2, 2, return_indices=True)
        u2 = F.max_unpool2d(p2, i2, 2, 2, output_size=h2.shape[-2:])
        u1 = F.max_unpool2d(self.d2(u2), i1, 2, 2, output_size=h1.shape[-2:])
        logits = self.d1(u1)
        loss = F.nll_loss(F.log_softmax(logits, 1), self.labels, ignore_index=255)
        conf, cls = logits.max(1)
        hit = (cls == self.labels).to(conf.dtype)
        return logits, loss + (conf.sigmoid() * hit).mean()


# ----------------------------------------------------------------------------- Longformer-lite

class LocalAttention(nn.Module):
    """Sliding-window attention: keys and values padded by w on both sides of the sequence and cut
    into windows with Tensor.unfold(2, 2w+1, 1); a mask of out-of-range window slots from arange;
    token 0 is global (attends to everything, and everything attends to it); .contiguous() after the
    permutes."""

    def __init__(self, d, heads=4, w=4):
        super().__init__()
        self.h, self.w = heads, w
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.gq = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, 2 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(2 * d, d))

    def forward(self, x):
        B, T, d = x.shape
        H, w, hd = self.h, self.w, d // self.h
        q, k, v = self.qkv(self.ln1(x)).view(B, T, 3, H, hd).permute(2, 0, 3, 1, 4).contiguous().unbind(0)
        kw = F.pad(k, (0, 0, w, w)).unfold(2, 2 * w + 1, 1)               # B, H, T, hd, 2w+1
        vw = F.pad(v, (0, 0, w, w)).unfold(2, 2 * w + 1, 1)
        s = torch.einsum("bhtd,bhtdw->bhtw", q, kw) / math.sqrt(hd)
        pos = torch.arange(T, device=x.device).view(T, 1) + torch.arange(-w, w + 1, device=x.device).view(1, -1)
        oob = (pos < 0) | (pos >= T)
        # the global token's key, seen by every query
        sg = (q * k[:, :, :1]).sum(-1, keepdim=True) / math.sqrt(hd)      # B, H, T, 1
        a = torch.softmax(torch.cat([s.masked_fill(oob, float("-inf")), sg], -1), -1)
        y = torch.einsum("bhtw,bhtdw->bhtd", a[..., :-1], vw) + a[..., -1:] * v[:, :, :1]
        # the global query, attending to everything
        g = self.gq(x[:, :1]).view(B, 1, H, hd).transpose(1, 2)
        ag = torch.softmax(g @ k.transpose(-1, -2) / math.sqrt(hd), -1)
        y = torch.cat([ag @ v, y[:, :, 1:]], 2)
        x = x + self.o(y.permute(0, 2, 1, 3).contiguous().view(B, T, d))
        return x + self.ff(self.ln2(x))


class Longformer(nn.Module):
    def __init__(self, vocab=200, d=48, T=64):
        super().__init__()
        self.tok = nn.Embedding(vocab, d, padding_idx=0)
        self.pos = nn.Parameter(0.02 * torch.randn(T, d))
        self.layers = nn.Sequential(LocalAttention(d), LocalAttention(d, w=2))
        self.ln, self.head = nn.LayerNorm(d), nn.Linear(d, vocab)

    def forward(self, ids):
        return F.log_softmax(self.head(self.ln(self.layers(self.tok(ids) + self.pos))), -1)


# ----------------------------------------------------------------------------- LoRA

class LoRALinear(nn.Module):
    """A frozen nn.Linear (requires_grad_(False)) plus B(A(dropout(x))) * alpha / r."""

    def __init__(self, cin, cout, r=4, alpha=8):
        super().__init__()
        self.base = nn.Linear(cin, cout).requires_grad_(False)
        self.A = nn.Parameter(torch.randn(r, cin) / math.sqrt(cin))
        self.B = nn.Parameter(0.01 * torch.randn(cout, r))
        self.scale, self.drop = alpha / r, nn.Dropout(0.1)

    def forward(self, x):
        return self.base(x) + F.linear(F.linear(self.drop(x), self.A), self.B) * self.scale


def layer_norm_var_mean(x, eps=1e-5):
    var, mean = torch.var_mean(x, -1, unbiased=False, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps)


class LoRABlock(nn.Module):
    def __init__(self, d, heads=4):
        super().__init__()
        self.h = heads
        self.q, self.v = LoRALinear(d, d), LoRALinear(d, d)
        self.k = nn.Linear(d, d).requires_grad_(False)
        self.o = nn.Linear(d, d).requires_grad_(False)
        self.f1, self.f2 = nn.Linear(d, 2 * d).requires_grad_(False), LoRALinear(2 * d, d)

    def forward(self, x):
        B, T, d = x.shape
        h = layer_norm_var_mean(x)
        q, k, v = (m(h).view(B, T, self.h, -1).transpose(1, 2) for m in (self.q, self.k, self.v))
        a = F.scaled_dot_product_attention(q, k, v)
        x = x + self.o(a.transpose(1, 2).reshape(B, T, d))
        return x + self.f2(F.gelu(self.f1(layer_norm_var_mean(x))))


class LoRAClassifier(nn.Module):
    """A frozen embedding and frozen base weights, LoRA adapters on q, v and the second FFN
    Linear; a hand LayerNorm with torch.var_mean; a trainable head; std_mean pooling; a
    label-smoothed cross-entropy against a label buffer returned with the logits."""

    def __init__(self, B, vocab=200, d=48, classes=6):
        super().__init__()
        self.emb = nn.Embedding(vocab, d).requires_grad_(False)
        self.blocks = nn.Sequential(LoRABlock(d), LoRABlock(d))
        self.head = nn.Linear(2 * d, classes)
        self.register_buffer("labels", torch.arange(B) % classes)

    def forward(self, ids):
        h = self.blocks(self.emb(ids))
        std, mean = torch.std_mean(h, 1)
        logits = self.head(torch.cat([mean, std], -1))
        return logits, F.cross_entropy(logits, self.labels, label_smoothing=0.1)


# ----------------------------------------------------------------------------- metric learning

class Embedder(nn.Module):
    def __init__(self, d=32):
        super().__init__()
        self.net = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1, padding_mode="circular"), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 32, 3, 2, padding=1, padding_mode="circular"), nn.BatchNorm2d(32), nn.ReLU(),
            nn.Conv2d(32, 32, 3, 2, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
            nn.Linear(32, d))

    def forward(self, x):
        return F.normalize(self.net(x), dim=-1)


class Triplet(nn.Module):
    """One circular-padded encoder on anchor / positive / negative images; triplet_margin_loss,
    margin_ranking_loss on the two distances, hardest negatives from torch.cdist(p=1) min over the
    batch (values used), cosine_similarity, cosine_embedding_loss; returns a dict."""

    def __init__(self):
        super().__init__()
        self.enc = Embedder()

    def forward(self, a, p, n):
        ea, ep, en = self.enc(a), self.enc(p), self.enc(n)
        l_tri = F.triplet_margin_loss(ea, ep, en, margin=0.3)
        dap, dan = F.pairwise_distance(ea, ep), F.pairwise_distance(ea, en)
        l_rank = F.margin_ranking_loss(dan, dap, torch.ones_like(dap), margin=0.1)
        d1 = torch.cdist(ea, torch.cat([en, ep]), p=1)                         # B, 2B
        hard, _ = d1[:, : ea.shape[0]].min(1)
        l_hard = F.relu(d1[:, ea.shape[0]:].diagonal() - hard + 0.5).mean()
        cos = F.cosine_similarity(ea.unsqueeze(1), en.unsqueeze(0), dim=-1)   # B, B
        l_cos = F.cosine_embedding_loss(ea, ep, torch.ones_like(dap))
        return {"emb": ea, "loss": l_tri + l_rank + l_hard + l_cos + cos.mean()}


# ----------------------------------------------------------------------------- channels_last

class CLNet(nn.Module):
    """A conv net converted with model.to(memory_format=torch.channels_last) (4-d weights stored
    NHWC), the input made channels_last in forward; a stem BatchNorm kept in eval mode inside the
    train-mode model (train() overridden, as detection code does); depthwise-separable blocks;
    nn.Unflatten in the head; x.contiguous() at the end of the features."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Conv2d(3, 24, 3, 2, 1, bias=False)
        self.stem_bn = nn.BatchNorm2d(24)
        blocks = []
        for cin, cout, s in [(24, 32, 2), (32, 32, 1), (32, 64, 2)]:
            blocks += [nn.Conv2d(cin, cin, 3, s, 1, groups=cin, bias=False), nn.BatchNorm2d(cin), nn.SiLU(),
                       nn.Conv2d(cin, cout, 1, bias=False), nn.BatchNorm2d(cout), nn.SiLU()]
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Sequential(nn.Linear(64, 4 * classes), nn.Unflatten(1, (4, classes)))

    def train(self, mode=True):
        super().train(mode)
        self.stem_bn.eval()
        return self

    def forward(self, x):
        x = x.contiguous(memory_format=torch.channels_last)
        h = self.blocks(F.relu(self.stem_bn(self.stem(x))))
        return self.head(h.contiguous().mean((2, 3))).logsumexp(1)


# ----------------------------------------------------------------------------- hierarchical RNN

class HRNN(nn.Module):
    """Word level: a bidirectional GRU with batch_first=False over (T, B*S, d); per-sentence max over
    words (values and argmax indices both used, the indices by gather); sentence level: nn.RNN
    (tanh, 2 layers, dropout between them) then nn.LSTM with proj_size; torch.cummax over sentences
    (values with gradient, indices as a position feature)."""

    def __init__(self, vocab=100, d=24, h=16):
        super().__init__()
        self.emb = nn.Embedding(vocab, d)
        self.word = nn.GRU(d, h, bidirectional=True)
        self.sent = nn.RNN(2 * h + d, h, num_layers=2, dropout=0.2, batch_first=True)
        self.doc = nn.LSTM(h, 2 * h, proj_size=h // 2, batch_first=True)
        self.head = nn.Linear(h // 2 + 1, 3)

    def forward(self, ids):   # B, S, T
        B, S, T = ids.shape
        e = self.emb(ids).view(B * S, T, -1)
        hw, _ = self.word(e.transpose(0, 1))                                  # T, BS, 2h
        mx, am = hw.max(0)                                                     # BS, 2h
        picked = e.gather(1, am[:, :1].unsqueeze(-1).expand(-1, 1, e.shape[-1])).squeeze(1)
        hs, _ = self.sent(torch.cat([mx, picked], -1).view(B, S, -1))
        hd, (hn, cn) = self.doc(hs)                                            # B, S, h/2
        cm, ci = torch.cummax(hd, 1)
        pos = ci.to(hd.dtype).mean(-1, keepdim=True) / S
        return self.head(torch.cat([cm, pos], -1)), hn.sum() + cn.mean()


# ----------------------------------------------------------------------------- order statistics

class OrderStats(nn.Module):
    """Set pooling by order statistics: torch.sort (values with gradient, indices by
    take_along_dim on a second tensor), kthvalue and median(dim) (values and indices), aminmax,
    cummin, std_mean / var_mean, torch.max(dim) both results used."""

    def __init__(self, d=32, classes=8):
        super().__init__()
        self.phi = nn.Sequential(nn.Linear(3, d), nn.ReLU(), nn.Linear(d, d))
        self.gate = nn.Linear(d, d)
        self.head = nn.Sequential(nn.Linear(8 * d, 64), nn.ReLU(), nn.Linear(64, classes))

    def forward(self, pts):   # B, N, 3
        h = self.phi(pts)                                          # B, N, d
        g = torch.sigmoid(self.gate(h))
        sv, si = torch.sort(h, 1, descending=True)
        topmean = sv[:, :4].mean(1)
        gs = torch.take_along_dim(g, si, 1)[:, :4].mean(1)
        kv, ki = torch.kthvalue(h, 3, 1)
        med, mi = h.median(1)
        kth_g = g.gather(1, mi.unsqueeze(1)).squeeze(1) + ki.to(h.dtype) * 1e-3
        mn, mxx = torch.aminmax(h.detach(), dim=1)           # no derivative: a detached range
        rng = ((h[:, 0] - mn) / (mxx - mn + 1e-3))
        cmin, _ = torch.cummin(sv, 1)
        std, mean = torch.std_mean(h, 1)
        var, _ = torch.var_mean(g, 1, correction=0)
        mv, mi2 = torch.max(h * g, 1)
        feat = torch.cat([topmean * gs, kv + kth_g, med, rng, cmin[:, -1], std * mean, var,
                          mv + mi2.to(h.dtype) / h.shape[1]], -1)
        return self.head(feat)


# ----------------------------------------------------------------------------- graph scatter

class GraphScatter(nn.Module):
    """Message passing over an int64 edge buffer: index_select of source features,
    scatter_reduce with amax (include_self=False) and mean into zeros, index_add; node degrees
    bucketized (torch.bucketize on a float boundary buffer) into a degree embedding; a learned
    score searchsorted into a sorted buffer whose result indexes a parameter table; index_copy of a
    node subset; take_along_dim."""

    def __init__(self, n, d=32, classes=4):
        super().__init__()
        g = torch.Generator().manual_seed(7)
        E = 4 * n
        src, dst = torch.randint(0, n, (E,), generator=g), torch.randint(0, n, (E,), generator=g)
        self.register_buffer("src", src); self.register_buffer("dst", dst)
        deg = torch.zeros(n).index_add_(0, dst, torch.ones(E))
        self.register_buffer("deg", deg)
        self.register_buffer("bounds", torch.tensor([1.0, 2.0, 4.0, 8.0]))
        self.register_buffer("sorted_ref", torch.linspace(-2, 2, 9))
        self.register_buffer("subset", torch.arange(0, n, 3))
        self.deg_emb = nn.Embedding(5, d)
        self.table = nn.Parameter(torch.randn(10, d) * 0.1)
        self.inp = nn.Linear(16, d)
        self.msg = nn.ModuleList([nn.Linear(d, d) for _ in range(2)])
        self.upd = nn.ModuleList([nn.Linear(3 * d, d) for _ in range(2)])
        self.score = nn.Linear(d, 1)
        self.sub = nn.Linear(d, d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):   # n, 16
        n = x.shape[0]
        h = self.inp(x) + self.deg_emb(torch.bucketize(self.deg, self.bounds))
        for msg, upd in zip(self.msg, self.upd):
            m = F.relu(msg(h.index_select(0, self.src)))                 # E, d
            idx = self.dst.unsqueeze(1).expand_as(m)
            amax = h.new_zeros(h.shape).scatter_reduce(0, idx, m, "amax", include_self=False)
            mean = h.new_zeros(h.shape).scatter_reduce(0, idx, m, "mean", include_self=True)
            add = torch.zeros_like(h).index_add(0, self.dst, m, alpha=0.5)
            h = h + F.gelu(upd(torch.cat([amax, mean, add], -1)))
        s = self.score(h).squeeze(-1)                                     # n
        bucket = torch.searchsorted(self.sorted_ref, s.detach().contiguous())
        h = h + self.table[bucket] * torch.tanh(s).unsqueeze(-1)
        h = h.index_copy(0, self.subset, torch.tanh(self.sub(h.index_select(0, self.subset))))
        order = h.abs().argmax(-1, keepdim=True)
        return self.head(h) + torch.take_along_dim(h, order, -1)


# ----------------------------------------------------------------------------- losses

class MultiLoss(nn.Module):
    """A small CNN with several heads and the losses written in the model: BCE-with-logits with
    pos_weight, nll_loss with ignore_index, KL divergence with log_target=True against a
    detached teacher head, a hand focal loss (sigmoid, pow, where), huber_loss, soft_margin_loss,
    multilabel_soft_margin_loss, poisson_nll_loss; returns a tuple of the logits and the losses."""

    def __init__(self, B, classes=7, tags=5):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, 32, 3, 2, 1), nn.BatchNorm2d(32), nn.ReLU(),
                                  nn.AdaptiveAvgPool2d(2), nn.Flatten())
        self.cls, self.teacher = nn.Linear(128, classes), nn.Linear(128, classes)
        self.tag, self.reg = nn.Linear(128, tags), nn.Linear(128, 2)
        g = torch.Generator().manual_seed(3)
        y = torch.randint(0, classes, (B,), generator=g); y[0] = -100
        self.register_buffer("y", y)
        self.register_buffer("tags", (torch.rand(B, tags, generator=g) > 0.7).float())
        self.register_buffer("pos_weight", torch.linspace(1, 3, tags))
        self.register_buffer("target", torch.randn(B, 2, generator=g))
        self.register_buffer("counts", torch.randint(0, 5, (B, 2), generator=g).float())

    def forward(self, x):
        f = self.body(x)
        logits, tl = self.cls(f), self.teacher(f).detach()
        t = self.tag(f)
        r = self.reg(f)
        bce = F.binary_cross_entropy_with_logits(t, self.tags, pos_weight=self.pos_weight)
        nll = F.nll_loss(F.log_softmax(logits, -1), self.y, ignore_index=-100)
        kl = F.kl_div(F.log_softmax(logits / 2, -1), F.log_softmax(tl / 2, -1), reduction="batchmean",
                      log_target=True)
        p = torch.sigmoid(t)
        pt = torch.where(self.tags > 0.5, p, 1 - p)
        focal = (-(1 - pt).pow(2.0) * torch.log(pt.clamp_min(1e-6))).mean()
        hub = F.huber_loss(r, self.target, delta=0.5)
        sm = F.soft_margin_loss(r, torch.sign(self.target))
        ml = F.multilabel_soft_margin_loss(t, self.tags)
        pn = F.poisson_nll_loss(r, self.counts, log_input=True)
        return logits, bce + nll + kl + focal, hub + sm + ml + pn


# ----------------------------------------------------------------------------- 3-D volumes

class VNet(nn.Module):
    """A 3-D encoder-decoder: Conv3d with replicate padding, strided Conv3d, ConvTranspose3d with
    output_padding, skip concat, InstanceNorm3d(affine), a dice loss written by hand against a
    buffer; nn.Bilinear fusing the pooled bottleneck with a pooled skip."""

    def __init__(self, B, S=16):
        super().__init__()
        self.c1 = nn.Conv3d(1, 8, 3, padding=1, padding_mode="replicate")
        self.n1 = nn.InstanceNorm3d(8, affine=True)
        self.c2 = nn.Conv3d(8, 16, 3, 2, 1)
        self.c3 = nn.Conv3d(16, 16, 3, padding=1, padding_mode="replicate")
        self.up = nn.ConvTranspose3d(16, 8, 3, 2, 1, output_padding=1)
        self.c4 = nn.Conv3d(16, 2, 3, padding=1)
        self.bil = nn.Bilinear(16, 8, 4)
        g = torch.Generator().manual_seed(4)
        self.register_buffer("mask", (torch.rand(B, 1, S, S, S, generator=g) > 0.5).float())

    def forward(self, v):
        h1 = F.leaky_relu(self.n1(self.c1(v)), 0.1)
        h2 = F.elu(self.c3(F.elu(self.c2(h1))))
        u = self.up(h2)
        out = self.c4(torch.cat([u, h1], 1))
        p = torch.softmax(out, 1)[:, 1:]
        dice = 1 - (2 * (p * self.mask).sum() + 1) / (p.sum() + self.mask.sum() + 1)
        z = self.bil(h2.mean((2, 3, 4)), h1.amax((2, 3, 4)))
        return out, dice, z


# ----------------------------------------------------------------------------- audio framing

class Framer(nn.Module):
    """Audio: overlapping frames cut with Tensor.as_strided (an STFT-like framing), a Hann window
    buffer, per-frame Linear 'filterbank', log1p of squares, a ConvTranspose1d overlap-add decoder
    (stride = hop) back to the waveform, an L1 loss, Conv1d with circular padding."""

    def __init__(self, frame=32, hop=16, bins=24):
        super().__init__()
        self.frame, self.hop = frame, hop
        self.register_buffer("window", torch.hann_window(frame))
        self.fb = nn.Linear(frame, bins)
        self.mix = nn.Conv1d(bins, bins, 3, padding=1, padding_mode="circular")
        self.dec = nn.ConvTranspose1d(bins, 1, frame, stride=hop)

    def forward(self, wav):   # B, L
        B, L = wav.shape
        nf = (L - self.frame) // self.hop + 1
        fr = wav.as_strided((B, nf, self.frame), (wav.stride(0), self.hop, 1)) * self.window
        spec = torch.log1p(self.fb(fr) ** 2)                                 # B, nf, bins
        h = F.gelu(self.mix(spec.transpose(1, 2)))                          # B, bins, nf
        rec = self.dec(h).squeeze(1)                                         # B, (nf-1)*hop+frame
        return rec, F.l1_loss(rec, wav[:, : rec.shape[1]])


# ----------------------------------------------------------------------------- frozen detector backbone

class FrozenDet(nn.Module):
    """A detection backbone: torchvision.ops.FrozenBatchNorm2d in the stem, the stem and first
    stage frozen (requires_grad_(False)), later stages with BatchNorm(track_running_stats=False);
    a parameter-free constant branch (a Sobel edge magnitude of the input by F.conv2d with a
    buffer kernel) concatenated to the features; box and objectness heads, sigmoid/exp."""

    def __init__(self):
        super().__init__()
        from torchvision.ops import FrozenBatchNorm2d
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), FrozenBatchNorm2d(16), nn.ReLU(),
                                  nn.Conv2d(16, 16, 3, 1, 1, bias=False), FrozenBatchNorm2d(16), nn.ReLU())
        self.stem.requires_grad_(False)
        self.s2 = nn.Sequential(nn.Conv2d(17, 32, 3, 2, 1, bias=False),
                                nn.BatchNorm2d(32, track_running_stats=False), nn.ReLU(),
                                nn.Conv2d(32, 32, 3, 1, 1, bias=False),
                                nn.BatchNorm2d(32, track_running_stats=False), nn.ReLU())
        self.obj, self.box = nn.Conv2d(32, 3, 1), nn.Conv2d(32, 12, 1)
        sob = torch.tensor([[-1.0, 0, 1], [-2, 0, 2], [-1, 0, 1]])
        self.register_buffer("sobel", torch.stack([sob, sob.t()]).unsqueeze(1).repeat(1, 1, 1, 1))

    def forward(self, x):
        f = self.stem(x)
        gray = x.mean(1, keepdim=True)
        e = F.conv2d(F.avg_pool2d(gray, 2), self.sobel, padding=1)
        edge = e.pow(2).sum(1, keepdim=True).sqrt()
        h = self.s2(torch.cat([f, edge], 1))
        obj = torch.sigmoid(self.obj(h))
        box = self.box(h)
        wh = torch.exp(box[:, 6:].clamp(max=4))
        return obj, torch.cat([box[:, :6], wh], 1)


# ----------------------------------------------------------------------------- DLRM

class DLRM(nn.Module):
    """A recommender: dense features through a bottom MLP, a dense feature bucketized into bucket
    ids, sparse ids looked up with F.embedding(max_norm=1.0) (renormalises the table rows in place
    in forward), pairwise dot interactions by bmm and triu_indices, nn.Bilinear between the
    dense vector and the bucket embedding, BCE-with-logits with pos_weight against a label
    buffer."""

    def __init__(self, B, d=16, vocab=50):
        super().__init__()
        self.bot = nn.Sequential(nn.Linear(13, 32), nn.ReLU(), nn.Linear(32, d), nn.ReLU())
        self.tables = nn.ParameterList([nn.Parameter(torch.randn(vocab, d)) for _ in range(3)])
        self.bucket_emb = nn.Embedding(6, d)
        self.register_buffer("bounds", torch.tensor([-1.0, -0.3, 0.0, 0.3, 1.0]))
        self.bil = nn.Bilinear(d, d, 8)
        n = 5
        self.register_buffer("iu", torch.triu_indices(n, n, 1))
        self.top = nn.Sequential(nn.Linear(d + n * (n - 1) // 2 + 8, 32), nn.ReLU(), nn.Linear(32, 1))
        self.register_buffer("label", (torch.arange(B) % 3 == 0).float().unsqueeze(1))
        self.register_buffer("pw", torch.tensor([2.0]))

    def forward(self, dense, sparse):   # B, 13 ; B, 3
        x = self.bot(dense)
        embs = [F.embedding(sparse[:, i], t, max_norm=1.0) for i, t in enumerate(self.tables)]
        be = self.bucket_emb(torch.bucketize(dense[:, 0].contiguous(), self.bounds))
        T = torch.stack([x, be] + embs, 1)                                   # B, 5, d
        Z = torch.bmm(T, T.transpose(1, 2))
        inter = Z[:, self.iu[0], self.iu[1]]
        logit = self.top(torch.cat([x, inter, self.bil(x, be)], -1))
        return logit, F.binary_cross_entropy_with_logits(logit, self.label, pos_weight=self.pw)


NAMES = ["segnet", "longformer", "lora", "triplet", "clnet", "hrnn", "orderstats", "graphscatter", "multiloss",
         "vnet", "framer", "frozendet", "dlrm"]


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    half = max(16, (S // 2) // 16 * 16)     # 48 at the default --image 96
    if name == "segnet":
        return SegNet(B, half), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "longformer":
        return Longformer(), [common.token_ids((B, 64), 200, g)]
    if name == "lora":
        return LoRAClassifier(B), [common.token_ids((B, 32), 200, g)]
    if name == "triplet":
        return Triplet(), [common.float_input((B, 3, 32, 32), dtype, g) for _ in range(3)]
    if name == "clnet":
        return CLNet().to(memory_format=torch.channels_last), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "hrnn":
        return HRNN(), [common.token_ids((B, 6, 10), 100, g)]
    if name == "orderstats":
        return OrderStats(), [common.float_input((B, 128, 3), dtype, g)]
    if name == "graphscatter":
        n = 16 * B
        return GraphScatter(n), [common.float_input((n, 16), dtype, g)]
    if name == "multiloss":
        return MultiLoss(B), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "vnet":
        return VNet(B), [common.float_input((B, 1, 16, 16, 16), dtype, g)]
    if name == "framer":
        return Framer(), [common.float_input((B, 16 * half + 16), dtype, g)]
    if name == "frozendet":
        return FrozenDet(), [common.float_input((B, 3, half, half), dtype, g)]
    if name == "dlrm":
        return DLRM(B), [common.float_input((B, 13), dtype, g), common.token_ids((B, 3), 50, g)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen6.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
