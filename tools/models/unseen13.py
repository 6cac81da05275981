#!/usr/bin/env python3
"""unseen13.py — a thirteenth set of models nobody tuned rkmate for
(after tools/models/unseen.py ... unseen12.py), all small and written as users
of torch 2.x write them today.  Each has idioms the other sets do not:

A SegFormer (NVlabs / HF SegformerForSemanticSegmentation): a Mix Transformer
encoder of four stages, each an overlapping patch embedding (a strided Conv2d
with kernel 7 / 3 and padding k // 2, flatten(2).transpose(1, 2), LayerNorm),
efficient self-attention whose keys and values come from a spatial-reduction
Conv2d(kernel = stride = sr_ratio) on the tokens reshaped to an image plus a
LayerNorm, explicit q @ k.transpose(-2, -1) * scale softmax, a Mix-FFN (Linear,
a depthwise 3x3 Conv2d on the tokens transposed and view-ed back to (B, C, H,
W), GELU, Linear), timm's drop_path (a per-sample Bernoulli tensor from
x.new_empty(shape).bernoulli_(keep_prob), divided by keep_prob), the stage
output reshape(B, H, W, -1).permute(0, 3, 1, 2).contiguous(); the all-MLP
decoder (per-stage Linear on flattened tokens, permute back, bilinear
F.interpolate(align_corners=False) of every stage to the 1/4 resolution, cat
in reverse order, 1x1 conv + BatchNorm + ReLU fuse, Dropout, 1x1 classifier),
the logits upsampled to the label size and a per-pixel cross-entropy with
ignore_index=255 on labels with an ignored border.

A YOLOv5 (ultralytics) at a small width: the v5.0 Focus stem (x[..., ::2,
::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2] cat-ed on
channels), Conv = Conv2d(bias=False) + BatchNorm2d(eps=1e-3, momentum=0.03) +
SiLU(inplace=True), C3 blocks (two 1x1 branches, Bottlenecks with a shortcut
add, cat, 1x1), SPPF (one MaxPool2d(5, 1, 2) applied three times in a chain,
cat of the four), a PANet neck (nn.Upsample(None, 2, "nearest") + cat top-down,
strided Conv + cat bottom-up), the Detect head's three 1x1 convs view-ed
(B, 3, 5 + C, H, W).permute(0, 1, 3, 4, 2).contiguous(), and a YOLO-style loss
on a random target mask: boolean indexing of the positives, the box decoded
by sigmoid() * 2 - 0.5 and (sigmoid() * 2) ** 2 * anchor (anchors a buffer
indexed by the mask's anchor index) with an L1 to the target boxes, class
BCE-with-logits on one-hot targets of the positives and objectness
BCE-with-logits over all cells weighted per level (balance 4.0 / 1.0 / 0.4).

A DeepLabV3 (torchvision.models.segmentation.deeplabv3): a small ResNet with
replace_stride_with_dilation (the last two stages dilated 2 and 4, output
stride 8), ASPP with a 1x1 branch, three dilated 3x3 branches (rates 6, 12,
18, bigger than the 12x12 feature map), an ASPPPooling branch
(AdaptiveAvgPool2d(1), 1x1 conv, BatchNorm, ReLU, F.interpolate(size=...,
mode="bilinear", align_corners=False) back to the feature size), cat, a 1x1
projection with Dropout(0.5), a 3x3 head, an FCN auxiliary head on the third
stage, both bilinearly upsampled to the input size, and cross-entropy(ignore
index 255) + 0.5 * the auxiliary loss as torchvision's reference trains it.

A RAFT-small optical-flow step (princeton-vl/RAFT, raft_small): a feature
encoder run once on torch.cat([image1, image2]) and split by torch.split, a
context encoder split into a tanh hidden state and a ReLU input, the
all-pairs correlation volume torch.matmul(f1.transpose(1, 2), f2) / sqrt(D)
view-ed to (B*H*W, 1, H, W), a 3-level pyramid by F.avg_pool2d(2, stride=2)
(RAFT's 4 levels end at 1x1 on a 12x12 map, where the lookup's normalisation
2 x / (W - 1) - 1 divides by zero), coordinates from
torch.meshgrid(indexing="ij") stacked and flipped to x, y, 4 refinement
iterations (coords1 detached each iteration, flow = coords1 - coords0) each
looking every level up with F.grid_sample (align_corners=True) on a radius-3
window of meshgrid deltas normalised to [-1, 1] (xgrid, ygrid =
coords.split([1, 1], dim=-1) and cat), a motion encoder, a ConvGRU (sigmoid
z, r, tanh q on cat([r * h, x])), a flow head, 8 * F.interpolate(flow,
scale_factor=8, bilinear, align_corners=True) upsampling and RAFT's sequence
loss (valid mask from the flow magnitude, weights gamma ** (N - i - 1), L1).

An HRNet pose estimator (HRNet-W-tiny, SimpleBaseline-style head): a stride-4
stem, two then three parallel branches of BasicBlocks at 1/4, 1/8 and 1/16,
transition layers (a strided 3x3 conv making a new branch from the lowest
one), repeated multi-resolution fusion in every module (the last one
multi_scale_output=False, the highest resolution only; for each output
branch the sum of: itself, strided 3x3 conv chains from the higher
resolutions, 1x1 conv + BatchNorm + F.interpolate(scale_factor=2 ** k,
mode="nearest") from the lower ones, then ReLU), a 1x1 keypoint head on the
highest branch, and the JointsMSELoss with target weights (heatmaps
reshape((B, K, -1)).split(1, 1), 0.5 * MSE of pred * w vs gt * w per joint).

An Informer forecaster (zhouhaoyi/Informer2020): token embedding by a
Conv1d(padding_mode="circular"), sinusoidal position buffer, a Linear of the
time features; encoder layers of ProbSparse self-attention (K expanded to
(B, H, L_Q, L_K, E) and indexed by advanced indexing [:, :, arange(L_Q)[:,
None], index_sample, :] with a fixed index_sample buffer in place of the
per-call torch.randint, the sparsity measure M = max - sum / L_K, M.topk
(n_top, sorted=False), Q_reduce by advanced indexing with arange(B)[:, None,
None], arange(H)[None, :, None], scores for the top queries only, the
initial context V.mean(-2).unsqueeze(-2).expand(...).clone() and the top
queries' attention output written into it by an in-place advanced-index
assignment context[b, h, index, :] = ...), distilling layers Conv1d(circular)
+ BatchNorm1d + ELU + MaxPool1d(3, 2, 1) between them, a decoder with masked
ProbSparse self-attention (initial context V.cumsum(-2), the ProbMask from
torch.triu(ones).bool() expanded and indexed at the top queries, masked_fill_
with -inf) and full cross-attention, a projection, and an MSE on the
pred_len last steps.

A deep-kernel-learning GP regression (GPyTorch's DKL example written out by
hand): an MLP feature extractor, an RBF kernel on the features with learnable
raw lengthscale / outputscale / noise through F.softplus, squared distances
(x1^2 + x2^2 - 2 x1 x2^T).clamp_min(0), K + (noise + 1e-4) * I by
torch.eye, L = torch.linalg.cholesky(K), alpha = torch.cholesky_solve(y[:,
None], L), and the exact negative marginal log-likelihood 0.5 y^T alpha +
sum log diag L (torch.diagonal) + 0.5 n log 2 pi, divided by n.

A GraphSAGE node classifier (pyg's SAGEConv written out): node features and
edge_index inputs, messages x[src], mean aggregation by new_zeros().
index_add_(0, dst, msgs) divided by the in-degree (index_add_ of ones,
clamp(min=1)), a max aggregation by new_zeros().scatter_reduce(0,
dst[:, None].expand(-1, C), msgs, reduce="amax", include_self=False), a third
layer by scatter_reduce(reduce="mean", include_self=False), lin_l(aggr) +
lin_r(x), F.normalize(p=2, dim=-1) after each layer, dropout, and
cross-entropy over logits[train_mask] (boolean indexing).

A two-tower retrieval model (the YouTube / TFRS sampled-softmax recipe): the
user tower an nn.EmbeddingBag(mode="sum", include_last_offset=True) over a
flat watch history with B + 1 offsets and per_sample_weights (recency
weights), an nn.EmbeddingBag(mode="mean", padding_idx=0) over a padded 2-D
search-token input (no offsets), dense features; the item tower an
nn.Embedding of the item id cat-ed with an EmbeddingBag(mode="mean",
padding_idx=0) of its tags; MLP towers, F.normalize, in-batch logits
u @ v.T / temperature minus log(sampling probability) of each column item (the
logQ correction), and cross-entropy on torch.arange(B) labels.

A CondConv / dynamic-convolution classifier (Yang et al., CondConv; Chen et
al., DY-Conv): per-sample routing weights (sigmoid of a Linear of the pooled
input for CondConv, softmax(logits / temperature) for DY-Conv), K expert
kernels mixed by torch.mm(routing, experts.view(K, -1)).view(B * Co, Ci //
g, k, k) (and the biases for DY-Conv), applied as one grouped F.conv2d on the
batch reshaped to (1, B * C, H, W) with groups=B (groups=B * C for a
depthwise CondConv), BatchNorm + ReLU, cross-entropy.

An involution network (RedNet, d-li14/involution): kernels generated per
pixel by an AvgPool2d(stride) + 1x1 conv-BN-ReLU bottleneck + 1x1 conv to
G * K * K channels, view(B, G, K * K, h, w).unsqueeze(2) times
F.unfold(x, K, dilation, padding, stride).view(B, G, C // G, K * K, h, w),
summed over the window and view-ed back, in bottleneck residual blocks; a
soft-split token stage (T2T-ViT style: overlapping F.unfold(kernel 4, stride
2, padding 1) patches, a Linear on each patch, F.fold back and divided by
F.fold of ones, the overlap count), and cross-entropy.

A PatchTST forecaster (yuqinie98/PatchTST, supervised): RevIN (mean and
sqrt(var(unbiased=False) + eps) over time detached, affine weight / bias,
denormalised at the output by (x - b) / (w + eps * eps) * std + mean),
nn.ReplicationPad1d((0, stride)) end padding, patching by x.unfold(
dimension=-1, size=patch_len, step=stride), channel independence (B * C
series), a learnable position parameter, nn.TransformerEncoder of
nn.TransformerEncoderLayer(batch_first=True, norm_first=True,
activation="gelu"), the flatten head (nn.Flatten(start_dim=-2), Linear to the
horizon), and an MSE.

A Demucs (facebookresearch/denoiser / demucs v2) waveform U-Net: input
normalised by the mono mix's std (mix.mean(dim=1, keepdim=True).std(dim=-1,
keepdim=True)), F.pad to the valid length, encoders Conv1d(K=8, S=4) + ReLU
+ Conv1d(1x1, 2C) + nn.GLU(1), a 2-layer bidirectional nn.LSTM on
permute(2, 0, 1) activations with a Linear(2C, C) back, decoders skip +
Conv1d(1x1, 2C) + GLU + ConvTranspose1d(K=8, S=4) (+ ReLU but the last) whose
skips are added after cropping the decoder's longer output by slicing
[..., :length], two sources view-ed (B, S, C, T), the valid length cropped,
std multiplied back, and an L1 on the waveforms.

A WGAN-GP critic step (Gulrajani et al. / the PyTorch-GAN recipe): the
gradient penalty differentiates the critic at random interpolates with
torch.autograd.grad(outputs, interpolates, grad_outputs=ones,
create_graph=True, retain_graph=True) and penalises (||grad||_2 - 1) ** 2.
A double backward cannot be a traced forward: the model tests that the
exporter or rkmate refuses it with a message that says what is wrong.  Under
torch.jit.trace the call fails inside torch itself (with grad_outputs:
"AssertionError: unexpected sym_eq between Tensor Tensor" from
autograd._make_grads; on outputs.sum() without grad_outputs: "Cannot insert
a Tensor that requires grad as a constant"), which names neither
torch.autograd.grad nor what to do; the exporter now stops it first ("the
model's forward runs a backward ..."), and writes no file.  The same
penalty under torch.jit.script keeps an aten::grad node, which `rkmate
trace` refuses (exit 2, no chain written).

Exported like the zoo (tools/models/common.export), with the zoo's options,
so that `tools/bench/zoo.py --models-script tools/models/unseen13.py` runs
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


# ----------------------------------------------------------------------------- SegFormer

def drop_path(x, drop_prob=0.0, training=False):
    """timm's drop_path: one Bernoulli draw per sample, scaled by 1 / keep_prob."""
    if drop_prob == 0.0 or not training:
        return x
    keep_prob = 1 - drop_prob
    shape = (x.shape[0],) + (1,) * (x.ndim - 1)
    random_tensor = x.new_empty(shape).bernoulli_(keep_prob)
    random_tensor.div_(keep_prob)
    return x * random_tensor


class DropPath(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p

    def forward(self, x):
        return drop_path(x, self.p, self.training)


class OverlapPatchEmbed(nn.Module):
    def __init__(self, ci, co, k, s):
        super().__init__()
        self.proj = nn.Conv2d(ci, co, k, s, padding=k // 2)
        self.norm = nn.LayerNorm(co)

    def forward(self, x):
        x = self.proj(x)
        _, _, H, W = x.shape
        return self.norm(x.flatten(2).transpose(1, 2)), H, W


class EfficientSelfAttention(nn.Module):
    def __init__(self, dim, heads, sr):
        super().__init__()
        self.heads, self.scale, self.sr_ratio = heads, (dim // heads) ** -0.5, sr
        self.q = nn.Linear(dim, dim)
        self.kv = nn.Linear(dim, 2 * dim)
        self.attn_drop = nn.Dropout(0.0)
        self.proj = nn.Linear(dim, dim)
        if sr > 1:
            self.sr = nn.Conv2d(dim, dim, sr, sr)
            self.norm = nn.LayerNorm(dim)

    def forward(self, x, H, W):
        B, N, C = x.shape
        q = self.q(x).reshape(B, N, self.heads, C // self.heads).permute(0, 2, 1, 3)
        if self.sr_ratio > 1:
            x_ = x.permute(0, 2, 1).reshape(B, C, H, W)
            x_ = self.norm(self.sr(x_).reshape(B, C, -1).permute(0, 2, 1))
        else:
            x_ = x
        kv = self.kv(x_).reshape(B, -1, 2, self.heads, C // self.heads).permute(2, 0, 3, 1, 4)
        k, v = kv[0], kv[1]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = self.attn_drop(attn.softmax(dim=-1))
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        return self.proj(x)


class MixFFN(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.fc1 = nn.Linear(dim, hidden)
        self.dwconv = nn.Conv2d(hidden, hidden, 3, 1, 1, groups=hidden)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x, H, W):
        x = self.fc1(x)
        B, N, C = x.shape
        x = self.dwconv(x.transpose(1, 2).view(B, C, H, W)).flatten(2).transpose(1, 2)
        return self.drop(self.fc2(self.drop(self.act(x))))


class MiTBlock(nn.Module):
    def __init__(self, dim, heads, sr, dp):
        super().__init__()
        self.norm1, self.attn = nn.LayerNorm(dim), EfficientSelfAttention(dim, heads, sr)
        self.norm2, self.mlp = nn.LayerNorm(dim), MixFFN(dim, 4 * dim)
        self.drop_path = DropPath(dp)

    def forward(self, x, H, W):
        x = x + self.drop_path(self.attn(self.norm1(x), H, W))
        return x + self.drop_path(self.mlp(self.norm2(x), H, W))


class SegFormer(nn.Module):
    def __init__(self, dims=(32, 64, 128, 160), heads=(1, 2, 4, 5), srs=(8, 4, 2, 1), depths=(2, 2, 2, 2),
                 n_classes=19, dec=128):
        super().__init__()
        dps = [x.item() for x in torch.linspace(0, 0.1, sum(depths))]
        self.embeds, self.stages, self.norms = nn.ModuleList(), nn.ModuleList(), nn.ModuleList()
        ci, j = 3, 0
        for i, d in enumerate(dims):
            self.embeds.append(OverlapPatchEmbed(ci, d, 7 if i == 0 else 3, 4 if i == 0 else 2))
            self.stages.append(nn.ModuleList([MiTBlock(d, heads[i], srs[i], dps[j + n]) for n in range(depths[i])]))
            self.norms.append(nn.LayerNorm(d))
            ci, j = d, j + depths[i]
        self.linear_c = nn.ModuleList([nn.Linear(d, dec) for d in dims])
        self.fuse = nn.Sequential(nn.Conv2d(4 * dec, dec, 1, bias=False), nn.BatchNorm2d(dec), nn.ReLU())
        self.dropout = nn.Dropout(0.1)
        self.classifier = nn.Conv2d(dec, n_classes, 1)

    def forward(self, x, labels):
        B = x.shape[0]
        feats = []
        for embed, blocks, norm in zip(self.embeds, self.stages, self.norms):
            x, H, W = embed(x)
            for blk in blocks:
                x = blk(x, H, W)
            x = norm(x).reshape(B, H, W, -1).permute(0, 3, 1, 2).contiguous()
            feats.append(x)
        size = feats[0].shape[2:]
        outs = []
        for f, lin in zip(feats, self.linear_c):
            h, w = f.shape[2:]
            e = lin(f.flatten(2).transpose(1, 2)).permute(0, 2, 1).reshape(B, -1, h, w)
            outs.append(F.interpolate(e, size=size, mode="bilinear", align_corners=False))
        logits = self.classifier(self.dropout(self.fuse(torch.cat(outs[::-1], dim=1))))
        up = F.interpolate(logits, size=labels.shape[-2:], mode="bilinear", align_corners=False)
        return F.cross_entropy(up, labels, ignore_index=255)


# ----------------------------------------------------------------------------- YOLOv5

class Conv(nn.Module):
    def __init__(self, ci, co, k=1, s=1, p=None):
        super().__init__()
        self.conv = nn.Conv2d(ci, co, k, s, k // 2 if p is None else p, bias=False)
        self.bn = nn.BatchNorm2d(co, eps=1e-3, momentum=0.03)
        self.act = nn.SiLU(inplace=True)

    def forward(self, x):
        return self.act(self.bn(self.conv(x)))


class Focus(nn.Module):
    def __init__(self, ci, co, k=3):
        super().__init__()
        self.conv = Conv(ci * 4, co, k)

    def forward(self, x):
        return self.conv(torch.cat([x[..., ::2, ::2], x[..., 1::2, ::2], x[..., ::2, 1::2], x[..., 1::2, 1::2]], 1))


class Bottleneck(nn.Module):
    def __init__(self, ci, co, shortcut=True, e=1.0):
        super().__init__()
        c_ = int(co * e)
        self.cv1, self.cv2 = Conv(ci, c_, 1), Conv(c_, co, 3)
        self.add = shortcut and ci == co

    def forward(self, x):
        return x + self.cv2(self.cv1(x)) if self.add else self.cv2(self.cv1(x))


class C3(nn.Module):
    def __init__(self, ci, co, n=1, shortcut=True):
        super().__init__()
        c_ = co // 2
        self.cv1, self.cv2, self.cv3 = Conv(ci, c_), Conv(ci, c_), Conv(2 * c_, co)
        self.m = nn.Sequential(*(Bottleneck(c_, c_, shortcut) for _ in range(n)))

    def forward(self, x):
        return self.cv3(torch.cat((self.m(self.cv1(x)), self.cv2(x)), 1))


class SPPF(nn.Module):
    def __init__(self, ci, co, k=5):
        super().__init__()
        c_ = ci // 2
        self.cv1, self.cv2 = Conv(ci, c_), Conv(c_ * 4, co)
        self.m = nn.MaxPool2d(k, 1, k // 2)

    def forward(self, x):
        x = self.cv1(x)
        y1 = self.m(x)
        y2 = self.m(y1)
        return self.cv2(torch.cat((x, y1, y2, self.m(y2)), 1))


class YOLOv5Lite(nn.Module):
    ANCHORS = ((10, 13, 16, 30, 33, 23), (30, 61, 62, 45, 59, 119), (116, 90, 156, 198, 373, 326))
    STRIDES = (8, 16, 32)

    def __init__(self, n_classes=5, w=16):
        super().__init__()
        self.nc, self.no, self.na = n_classes, n_classes + 5, 3
        self.b0 = Focus(3, w)                                                   # /2
        self.b1, self.b2 = Conv(w, 2 * w, 3, 2), C3(2 * w, 2 * w, 1)           # /4
        self.b3, self.b4 = Conv(2 * w, 4 * w, 3, 2), C3(4 * w, 4 * w, 2)       # /8  P3
        self.b5, self.b6 = Conv(4 * w, 8 * w, 3, 2), C3(8 * w, 8 * w, 2)       # /16 P4
        self.b7, self.b8 = Conv(8 * w, 16 * w, 3, 2), C3(16 * w, 16 * w, 1)    # /32 P5
        self.b9 = SPPF(16 * w, 16 * w)
        self.h10, self.h13 = Conv(16 * w, 8 * w), C3(16 * w, 8 * w, 1, False)
        self.h14, self.h17 = Conv(8 * w, 4 * w), C3(8 * w, 4 * w, 1, False)
        self.h18, self.h20 = Conv(4 * w, 4 * w, 3, 2), C3(8 * w, 8 * w, 1, False)
        self.h21, self.h23 = Conv(8 * w, 8 * w, 3, 2), C3(16 * w, 16 * w, 1, False)
        self.up = nn.Upsample(None, 2, "nearest")
        self.detect = nn.ModuleList(nn.Conv2d(c, self.no * self.na, 1) for c in (4 * w, 8 * w, 16 * w))
        self.register_buffer("anchors", torch.tensor(self.ANCHORS, dtype=torch.float32).view(3, 3, 2)
                             / torch.tensor(self.STRIDES, dtype=torch.float32).view(3, 1, 1))

    def forward(self, x, m3, m4, m5, tb3, tb4, tb5, tc3, tc4, tc5):
        x = self.b2(self.b1(self.b0(x)))
        p3 = self.b4(self.b3(x))
        p4 = self.b6(self.b5(p3))
        p5 = self.b9(self.b8(self.b7(p4)))
        h10 = self.h10(p5)
        h14 = self.h14(self.h13(torch.cat([self.up(h10), p4], 1)))
        o3 = self.h17(torch.cat([self.up(h14), p3], 1))
        o4 = self.h20(torch.cat([self.h18(o3), h14], 1))
        o5 = self.h23(torch.cat([self.h21(o4), h10], 1))
        preds = []
        for conv, f in zip(self.detect, (o3, o4, o5)):
            bs, _, ny, nx = f.shape
            preds.append(conv(f).view(bs, self.na, self.no, ny, nx).permute(0, 1, 3, 4, 2).contiguous())
        lbox, lobj, lcls = 0.0, 0.0, 0.0
        balance = (4.0, 1.0, 0.4)
        for i, (pi, mask, tbox, tcls) in enumerate(zip(preds, (m3, m4, m5), (tb3, tb4, tb5), (tc3, tc4, tc5))):
            ps = pi[mask]                                                       # (n, 5 + C) positives
            anchor = self.anchors[i][None, :, None, None, :].expand(mask.shape + (2,))[mask]
            pxy = ps[:, :2].sigmoid() * 2 - 0.5
            pwh = (ps[:, 2:4].sigmoid() * 2) ** 2 * anchor
            lbox = lbox + (torch.cat((pxy, pwh), 1) - tbox[mask]).abs().mean()
            tobj = mask.to(pi.dtype) * 0.9
            t = torch.zeros_like(ps[:, 5:])
            t[torch.arange(ps.shape[0]), tcls[mask]] = 1.0
            lcls = lcls + F.binary_cross_entropy_with_logits(ps[:, 5:], t)
            lobj = lobj + F.binary_cross_entropy_with_logits(pi[..., 4], tobj) * balance[i]
        bs = x.shape[0]
        return (0.05 * lbox + 1.0 * lobj + 0.5 * lcls) * bs


# ----------------------------------------------------------------------------- DeepLabV3

class BasicBlock(nn.Module):
    def __init__(self, ci, co, stride=1, dilation=1):
        super().__init__()
        self.conv1 = nn.Conv2d(ci, co, 3, stride, dilation, dilation, bias=False)
        self.bn1 = nn.BatchNorm2d(co)
        self.conv2 = nn.Conv2d(co, co, 3, 1, dilation, dilation, bias=False)
        self.bn2 = nn.BatchNorm2d(co)
        self.relu = nn.ReLU(inplace=True)
        self.down = (nn.Sequential(nn.Conv2d(ci, co, 1, stride, bias=False), nn.BatchNorm2d(co))
                     if stride != 1 or ci != co else None)

    def forward(self, x):
        idt = x if self.down is None else self.down(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + idt)


class ASPPPooling(nn.Sequential):
    def __init__(self, ci, co):
        super().__init__(nn.AdaptiveAvgPool2d(1), nn.Conv2d(ci, co, 1, bias=False), nn.BatchNorm2d(co), nn.ReLU())

    def forward(self, x):
        size = x.shape[-2:]
        for mod in self:
            x = mod(x)
        return F.interpolate(x, size=size, mode="bilinear", align_corners=False)


class ASPP(nn.Module):
    def __init__(self, ci, rates=(6, 12, 18), co=64):
        super().__init__()
        mods = [nn.Sequential(nn.Conv2d(ci, co, 1, bias=False), nn.BatchNorm2d(co), nn.ReLU())]
        for r in rates:
            mods.append(nn.Sequential(nn.Conv2d(ci, co, 3, padding=r, dilation=r, bias=False),
                                      nn.BatchNorm2d(co), nn.ReLU()))
        mods.append(ASPPPooling(ci, co))
        self.convs = nn.ModuleList(mods)
        self.project = nn.Sequential(nn.Conv2d(len(mods) * co, co, 1, bias=False), nn.BatchNorm2d(co), nn.ReLU(),
                                     nn.Dropout(0.5))

    def forward(self, x):
        return self.project(torch.cat([conv(x) for conv in self.convs], dim=1))


class DeepLabV3(nn.Module):
    def __init__(self, n_classes=11, w=16):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        self.layer1 = nn.Sequential(BasicBlock(w, w), BasicBlock(w, w))
        self.layer2 = nn.Sequential(BasicBlock(w, 2 * w, 2), BasicBlock(2 * w, 2 * w))
        self.layer3 = nn.Sequential(BasicBlock(2 * w, 4 * w, 1, 2), BasicBlock(4 * w, 4 * w, 1, 2))
        self.layer4 = nn.Sequential(BasicBlock(4 * w, 8 * w, 1, 4), BasicBlock(8 * w, 8 * w, 1, 4))
        self.head = nn.Sequential(ASPP(8 * w), nn.Conv2d(64, 64, 3, padding=1, bias=False), nn.BatchNorm2d(64),
                                  nn.ReLU(), nn.Conv2d(64, n_classes, 1))
        self.aux = nn.Sequential(nn.Conv2d(4 * w, w, 3, padding=1, bias=False), nn.BatchNorm2d(w), nn.ReLU(),
                                 nn.Dropout(0.1), nn.Conv2d(w, n_classes, 1))

    def forward(self, x, target):
        size = x.shape[-2:]
        f = self.layer2(self.layer1(self.stem(x)))
        aux_f = self.layer3(f)
        out = self.head(self.layer4(aux_f))
        out = F.interpolate(out, size=size, mode="bilinear", align_corners=False)
        aux = F.interpolate(self.aux(aux_f), size=size, mode="bilinear", align_corners=False)
        return F.cross_entropy(out, target, ignore_index=255) + 0.5 * F.cross_entropy(aux, target, ignore_index=255)


# ----------------------------------------------------------------------------- RAFT-small

class ResBlockIN(nn.Module):
    def __init__(self, ci, co, norm, stride=1):
        super().__init__()
        mk = (lambda c: nn.InstanceNorm2d(c)) if norm == "instance" else (lambda c: nn.Identity())
        self.conv1, self.conv2 = nn.Conv2d(ci, co // 4, 1), nn.Conv2d(co // 4, co // 4, 3, stride, 1)
        self.conv3 = nn.Conv2d(co // 4, co, 1)
        self.n1, self.n2, self.n3 = mk(co // 4), mk(co // 4), mk(co)
        self.relu = nn.ReLU(inplace=True)
        self.down = None if stride == 1 and ci == co else nn.Sequential(nn.Conv2d(ci, co, 1, stride), mk(co))

    def forward(self, x):
        y = self.relu(self.n1(self.conv1(x)))
        y = self.relu(self.n2(self.conv2(y)))
        y = self.relu(self.n3(self.conv3(y)))
        if self.down is not None:
            x = self.down(x)
        return self.relu(x + y)


class SmallEncoder(nn.Module):
    def __init__(self, out_dim, norm):
        super().__init__()
        self.conv1 = nn.Conv2d(3, 32, 7, 2, 3)
        self.norm1 = nn.InstanceNorm2d(32) if norm == "instance" else nn.Identity()
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = ResBlockIN(32, 32, norm, 1)
        self.layer2 = ResBlockIN(32, 48, norm, 2)
        self.layer3 = ResBlockIN(48, 64, norm, 2)
        self.conv2 = nn.Conv2d(64, out_dim, 1)
        self.dropout = nn.Dropout2d(0.0)

    def forward(self, x):
        x = self.relu(self.norm1(self.conv1(x)))
        return self.dropout(self.conv2(self.layer3(self.layer2(self.layer1(x)))))


def coords_grid(batch, ht, wd, like):
    ys, xs = torch.meshgrid(torch.arange(ht, dtype=like.dtype), torch.arange(wd, dtype=like.dtype), indexing="ij")
    coords = torch.stack([xs, ys], dim=0)
    return coords[None].repeat(batch, 1, 1, 1)


def bilinear_sampler(img, coords):
    H, W = img.shape[-2:]
    xgrid, ygrid = coords.split([1, 1], dim=-1)
    xgrid = 2 * xgrid / (W - 1) - 1
    ygrid = 2 * ygrid / (H - 1) - 1
    return F.grid_sample(img, torch.cat([xgrid, ygrid], dim=-1), align_corners=True)


class CorrBlock:
    def __init__(self, fmap1, fmap2, num_levels=4, radius=3):
        self.num_levels, self.radius = num_levels, radius
        B, D, H, W = fmap1.shape
        corr = torch.matmul(fmap1.view(B, D, H * W).transpose(1, 2), fmap2.view(B, D, H * W))
        corr = (corr / math.sqrt(D)).reshape(B * H * W, 1, H, W)
        self.pyramid = [corr]
        for _ in range(num_levels - 1):
            corr = F.avg_pool2d(corr, 2, stride=2)
            self.pyramid.append(corr)

    def __call__(self, coords):
        r = self.radius
        coords = coords.permute(0, 2, 3, 1)
        B, H, W, _ = coords.shape
        out = []
        for i, corr in enumerate(self.pyramid):
            d = torch.linspace(-r, r, 2 * r + 1, dtype=coords.dtype)
            dy, dx = torch.meshgrid(d, d, indexing="ij")
            delta = torch.stack([dy, dx], dim=-1).view(1, 2 * r + 1, 2 * r + 1, 2)
            centroid = coords.reshape(B * H * W, 1, 1, 2) / 2 ** i
            out.append(bilinear_sampler(corr, centroid + delta).view(B, H, W, -1))
        return torch.cat(out, dim=-1).permute(0, 3, 1, 2).contiguous()


class ConvGRU(nn.Module):
    def __init__(self, hidden, inp):
        super().__init__()
        self.convz = nn.Conv2d(hidden + inp, hidden, 3, padding=1)
        self.convr = nn.Conv2d(hidden + inp, hidden, 3, padding=1)
        self.convq = nn.Conv2d(hidden + inp, hidden, 3, padding=1)

    def forward(self, h, x):
        hx = torch.cat([h, x], dim=1)
        z = torch.sigmoid(self.convz(hx))
        r = torch.sigmoid(self.convr(hx))
        q = torch.tanh(self.convq(torch.cat([r * h, x], dim=1)))
        return (1 - z) * h + z * q


class SmallUpdateBlock(nn.Module):
    def __init__(self, cor_planes, hidden=64, ctx=32):
        super().__init__()
        self.convc1 = nn.Conv2d(cor_planes, 64, 1)
        self.convf1 = nn.Conv2d(2, 32, 7, padding=3)
        self.convf2 = nn.Conv2d(32, 16, 3, padding=1)
        self.conv = nn.Conv2d(64 + 16, 62, 3, padding=1)
        self.gru = ConvGRU(hidden, 64 + ctx)
        self.fh1, self.fh2 = nn.Conv2d(hidden, 96, 3, padding=1), nn.Conv2d(96, 2, 3, padding=1)

    def forward(self, net, inp, corr, flow):
        cor = F.relu(self.convc1(corr))
        flo = F.relu(self.convf2(F.relu(self.convf1(flow))))
        motion = torch.cat([F.relu(self.conv(torch.cat([cor, flo], dim=1))), flow], dim=1)
        net = self.gru(net, torch.cat([inp, motion], dim=1))
        return net, self.fh2(F.relu(self.fh1(net)))


class RAFTSmall(nn.Module):
    def __init__(self, iters=4, levels=3, radius=3, hidden=64, ctx=32):
        super().__init__()
        self.iters, self.levels, self.radius, self.hidden, self.ctx = iters, levels, radius, hidden, ctx
        self.fnet = SmallEncoder(96, "instance")
        self.cnet = SmallEncoder(hidden + ctx, "none")
        self.update = SmallUpdateBlock(levels * (2 * radius + 1) ** 2, hidden, ctx)

    def forward(self, image1, image2, flow_gt, gamma=0.8):
        image1, image2 = 2 * (image1 / 255.0) - 1.0, 2 * (image2 / 255.0) - 1.0
        fmap1, fmap2 = torch.split(self.fnet(torch.cat([image1, image2], dim=0)), image1.shape[0], dim=0)
        corr_fn = CorrBlock(fmap1, fmap2, self.levels, self.radius)
        net, inp = torch.split(self.cnet(image1), [self.hidden, self.ctx], dim=1)
        net, inp = torch.tanh(net), torch.relu(inp)
        B, _, H, W = fmap1.shape
        coords0 = coords_grid(B, H, W, fmap1)
        coords1 = coords_grid(B, H, W, fmap1)
        preds = []
        for _ in range(self.iters):
            coords1 = coords1.detach()
            corr = corr_fn(coords1)
            flow = coords1 - coords0
            net, delta = self.update(net, inp, corr, flow)
            coords1 = coords1 + delta
            preds.append(8 * F.interpolate(coords1 - coords0, scale_factor=8, mode="bilinear", align_corners=True))
        mag = torch.sum(flow_gt ** 2, dim=1).sqrt()
        valid = (mag < 400).to(flow_gt.dtype)
        n = len(preds)
        loss = 0.0
        for i, p in enumerate(preds):
            loss = loss + gamma ** (n - i - 1) * (valid[:, None] * (p - flow_gt).abs()).mean()
        return loss


# ----------------------------------------------------------------------------- HRNet

def conv_bn(ci, co, k=3, s=1, relu=True):
    layers = [nn.Conv2d(ci, co, k, s, k // 2, bias=False), nn.BatchNorm2d(co, momentum=0.1)]
    if relu:
        layers.append(nn.ReLU(inplace=True))
    return nn.Sequential(*layers)


class HRModule(nn.Module):
    def __init__(self, channels, n_blocks=2, multi_scale_output=True):
        super().__init__()
        self.nb = len(channels)
        self.n_out = self.nb if multi_scale_output else 1
        self.branches = nn.ModuleList(nn.Sequential(*(BasicBlock(c, c) for _ in range(n_blocks))) for c in channels)
        fuse = []
        for i in range(self.n_out):
            row = []
            for j in range(self.nb):
                if j > i:                                                       # lower resolution: 1x1 + up
                    row.append(conv_bn(channels[j], channels[i], 1, relu=False))
                elif j == i:
                    row.append(nn.Identity())
                else:                                                           # higher resolution: strided 3x3s
                    steps = []
                    for k in range(i - j):
                        last = k == i - j - 1
                        steps.append(conv_bn(channels[j], channels[i] if last else channels[j], 3, 2, relu=not last))
                    row.append(nn.Sequential(*steps))
            fuse.append(nn.ModuleList(row))
        self.fuse = nn.ModuleList(fuse)
        self.relu = nn.ReLU(False)

    def forward(self, xs):
        xs = [b(x) for b, x in zip(self.branches, xs)]
        out = []
        for i in range(self.n_out):
            y = xs[0] if i == 0 else self.fuse[i][0](xs[0])
            for j in range(1, self.nb):
                if j == i:
                    y = y + xs[j]
                elif j > i:
                    y = y + F.interpolate(self.fuse[i][j](xs[j]), scale_factor=2 ** (j - i), mode="nearest")
                else:
                    y = y + self.fuse[i][j](xs[j])
            out.append(self.relu(y))
        return out


class HRNetSmall(nn.Module):
    def __init__(self, n_joints=17, c=16):
        super().__init__()
        self.stem = nn.Sequential(conv_bn(3, 32, 3, 2), conv_bn(32, 32, 3, 2))
        self.layer1 = nn.Sequential(BasicBlock(32, 32), BasicBlock(32, 32))
        self.trans1 = nn.ModuleList([conv_bn(32, c), conv_bn(32, 2 * c, 3, 2)])
        self.stage2 = nn.Sequential(HRModule([c, 2 * c]))
        self.trans2 = conv_bn(2 * c, 4 * c, 3, 2)
        self.stage3 = nn.Sequential(HRModule([c, 2 * c, 4 * c]),
                                    HRModule([c, 2 * c, 4 * c], multi_scale_output=False))
        self.final = nn.Conv2d(c, n_joints, 1)

    def forward(self, x, target, target_weight):
        x = self.layer1(self.stem(x))
        xs = [t(x) for t in self.trans1]
        for m in self.stage2:
            xs = m(xs)
        xs = xs + [self.trans2(xs[-1])]
        for m in self.stage3:
            xs = m(xs)
        output = self.final(xs[0])
        B, K = output.shape[:2]
        heat_pred = output.reshape((B, K, -1)).split(1, 1)
        heat_gt = target.reshape((B, K, -1)).split(1, 1)
        loss = 0
        for idx in range(K):
            p, g = heat_pred[idx].squeeze(), heat_gt[idx].squeeze()
            w = target_weight[:, idx]
            loss = loss + 0.5 * F.mse_loss(p.mul(w), g.mul(w))
        return loss / K


# ----------------------------------------------------------------------------- Informer

class ProbAttention(nn.Module):
    def __init__(self, mask_flag, L_Q, L_K, factor=5):
        super().__init__()
        self.mask_flag, self.factor = mask_flag, factor
        self.u_part = min(factor * int(math.ceil(math.log(L_K))), L_K)
        self.u = min(factor * int(math.ceil(math.log(L_Q))), L_Q)
        g = torch.Generator().manual_seed(L_Q * 1000 + L_K)
        # Informer draws torch.randint(L_K, (L_Q, sample_k)) per call; a fixed draw here
        self.register_buffer("index_sample", torch.randint(L_K, (L_Q, self.u_part), generator=g))

    def _prob_QK(self, Q, K):
        B, H, L_K, E = K.shape
        L_Q = Q.shape[2]
        K_expand = K.unsqueeze(-3).expand(B, H, L_Q, L_K, E)
        K_sample = K_expand[:, :, torch.arange(L_Q).unsqueeze(1), self.index_sample, :]
        Q_K_sample = torch.matmul(Q.unsqueeze(-2), K_sample.transpose(-2, -1)).squeeze(-2)
        M = Q_K_sample.max(-1)[0] - torch.div(Q_K_sample.sum(-1), L_K)
        M_top = M.topk(self.u, sorted=False)[1]
        Q_reduce = Q[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], M_top, :]
        return torch.matmul(Q_reduce, K.transpose(-2, -1)), M_top

    def forward(self, queries, keys, values):
        B, L_Q, H, D = queries.shape
        L_K = keys.shape[1]
        Q, K, V = queries.transpose(2, 1), keys.transpose(2, 1), values.transpose(2, 1)
        scores_top, index = self._prob_QK(Q, K)
        scores_top = scores_top * (1.0 / math.sqrt(D))
        if self.mask_flag:
            context = V.cumsum(dim=-2)
            _mask = torch.ones(L_Q, L_K, dtype=torch.bool).triu(1)
            _mask_ex = _mask[None, None, :].expand(B, H, L_Q, L_K)
            indicator = _mask_ex[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :]
            scores_top = scores_top.masked_fill_(indicator.view(scores_top.shape), -math.inf)
        else:
            context = V.mean(dim=-2).unsqueeze(-2).expand(B, H, L_Q, D).clone()
        attn = torch.softmax(scores_top, dim=-1)
        context[torch.arange(B)[:, None, None], torch.arange(H)[None, :, None], index, :] = torch.matmul(attn, V)
        return context.transpose(2, 1).contiguous()


class FullAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.dropout = nn.Dropout(0.05)

    def forward(self, q, k, v):
        scale = 1.0 / math.sqrt(q.shape[-1])
        scores = torch.einsum("blhe,bshe->bhls", q, k)
        A = self.dropout(torch.softmax(scale * scores, dim=-1))
        return torch.einsum("bhls,bshd->blhd", A, v).contiguous()


class AttentionLayer(nn.Module):
    def __init__(self, attention, d_model, heads, mix=False):
        super().__init__()
        self.inner, self.heads, self.mix = attention, heads, mix
        self.q, self.k, self.v = (nn.Linear(d_model, d_model) for _ in range(3))
        self.o = nn.Linear(d_model, d_model)

    def forward(self, queries, keys, values):
        B, L, _ = queries.shape
        S, H = keys.shape[1], self.heads
        out = self.inner(self.q(queries).view(B, L, H, -1), self.k(keys).view(B, S, H, -1),
                         self.v(values).view(B, S, H, -1))
        if self.mix:
            out = out.transpose(2, 1).contiguous()
        return self.o(out.view(B, L, -1))


class DistilConv(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.downConv = nn.Conv1d(c, c, 3, padding=1, padding_mode="circular")
        self.norm = nn.BatchNorm1d(c)
        self.act = nn.ELU()
        self.maxPool = nn.MaxPool1d(3, 2, 1)

    def forward(self, x):
        x = self.maxPool(self.act(self.norm(self.downConv(x.permute(0, 2, 1)))))
        return x.transpose(1, 2)


class EncoderLayer(nn.Module):
    def __init__(self, attention, d_model, d_ff):
        super().__init__()
        self.attention = attention
        self.conv1, self.conv2 = nn.Conv1d(d_model, d_ff, 1), nn.Conv1d(d_ff, d_model, 1)
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.dropout = nn.Dropout(0.05)

    def forward(self, x):
        x = self.norm1(x + self.dropout(self.attention(x, x, x)))
        y = self.dropout(F.gelu(self.conv1(x.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))
        return self.norm2(x + y)


class DecoderLayer(nn.Module):
    def __init__(self, self_attn, cross_attn, d_model, d_ff):
        super().__init__()
        self.self_attn, self.cross_attn = self_attn, cross_attn
        self.conv1, self.conv2 = nn.Conv1d(d_model, d_ff, 1), nn.Conv1d(d_ff, d_model, 1)
        self.norm1, self.norm2, self.norm3 = (nn.LayerNorm(d_model) for _ in range(3))
        self.dropout = nn.Dropout(0.05)

    def forward(self, x, cross):
        x = self.norm1(x + self.dropout(self.self_attn(x, x, x)))
        x = self.norm2(x + self.dropout(self.cross_attn(x, cross, cross)))
        y = self.dropout(F.gelu(self.conv1(x.transpose(-1, 1))))
        y = self.dropout(self.conv2(y).transpose(-1, 1))
        return self.norm3(x + y)


class DataEmbedding(nn.Module):
    def __init__(self, c_in, n_mark, d_model, max_len=512):
        super().__init__()
        self.token = nn.Conv1d(c_in, d_model, 3, padding=1, padding_mode="circular", bias=False)
        pe = torch.zeros(max_len, d_model)
        pos = torch.arange(0, max_len).float().unsqueeze(1)
        div = (torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model)).exp()
        pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
        self.register_buffer("pe", pe.unsqueeze(0))
        self.temporal = nn.Linear(n_mark, d_model, bias=False)
        self.dropout = nn.Dropout(0.05)

    def forward(self, x, mark):
        x = self.token(x.permute(0, 2, 1)).transpose(1, 2)
        return self.dropout(x + self.pe[:, : x.shape[1]] + self.temporal(mark))


class Informer(nn.Module):
    def __init__(self, c_in=7, n_mark=4, seq_len=96, label_len=48, pred_len=24, d_model=64, heads=4, d_ff=128):
        super().__init__()
        self.pred_len = pred_len
        self.enc_emb, self.dec_emb = DataEmbedding(c_in, n_mark, d_model), DataEmbedding(c_in, n_mark, d_model)
        Ls = [seq_len, (seq_len - 1) // 2 + 1]
        self.enc = nn.ModuleList(EncoderLayer(AttentionLayer(ProbAttention(False, L, L), d_model, heads),
                                              d_model, d_ff) for L in Ls)
        self.distil = nn.ModuleList([DistilConv(d_model)])
        self.enc_norm = nn.LayerNorm(d_model)
        L_dec = label_len + pred_len
        self.dec = nn.ModuleList([DecoderLayer(AttentionLayer(ProbAttention(True, L_dec, L_dec), d_model, heads,
                                                              mix=True),
                                               AttentionLayer(FullAttention(), d_model, heads), d_model, d_ff)])
        self.dec_norm = nn.LayerNorm(d_model)
        self.proj = nn.Linear(d_model, c_in)

    def forward(self, x_enc, mark_enc, x_dec, mark_dec, y):
        e = self.enc_emb(x_enc, mark_enc)
        e = self.enc[0](e)
        e = self.distil[0](e)
        e = self.enc_norm(self.enc[1](e))
        d = self.dec_emb(x_dec, mark_dec)
        for layer in self.dec:
            d = layer(d, e)
        out = self.proj(self.dec_norm(d))[:, -self.pred_len:, :]
        return F.mse_loss(out, y)


# ----------------------------------------------------------------------------- deep-kernel GP

class DKLGP(nn.Module):
    def __init__(self, d_in=8, feat=2):
        super().__init__()
        self.feature_extractor = nn.Sequential(nn.Linear(d_in, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU(),
                                               nn.Linear(32, feat))
        self.raw_lengthscale = nn.Parameter(torch.zeros(1))
        self.raw_outputscale = nn.Parameter(torch.zeros(1))
        self.raw_noise = nn.Parameter(torch.tensor([-1.0]))
        self.mean_constant = nn.Parameter(torch.zeros(1))

    def rbf(self, x1, x2):
        ls = F.softplus(self.raw_lengthscale)
        a, b = x1 / ls, x2 / ls
        d2 = (a.pow(2).sum(-1, keepdim=True) + b.pow(2).sum(-1)[None, :] - 2 * a @ b.T).clamp_min(0)
        return F.softplus(self.raw_outputscale) * torch.exp(-0.5 * d2)

    def forward(self, x, y):
        z = self.feature_extractor(x)
        z = z - z.mean(0)                                                       # GPyTorch's ScaleToBounds, simplified
        n = x.shape[0]
        K = self.rbf(z, z) + (F.softplus(self.raw_noise) + 1e-4) * torch.eye(n, dtype=x.dtype)
        L = torch.linalg.cholesky(K)
        r = (y - self.mean_constant)[:, None]
        alpha = torch.cholesky_solve(r, L)
        nll = 0.5 * (r * alpha).sum() + torch.log(torch.diagonal(L)).sum() + 0.5 * n * math.log(2 * math.pi)
        return nll / n


# ----------------------------------------------------------------------------- GraphSAGE

class SAGEConv(nn.Module):
    def __init__(self, ci, co, aggr):
        super().__init__()
        self.aggr = aggr
        self.lin_l = nn.Linear(ci, co)
        self.lin_r = nn.Linear(ci, co, bias=False)

    def forward(self, x, edge_index):
        src, dst = edge_index[0], edge_index[1]
        msgs = x[src]
        N, C = x.shape
        if self.aggr == "mean":
            out = x.new_zeros((N, C)).index_add_(0, dst, msgs)
            deg = x.new_zeros((N,)).index_add_(0, dst, torch.ones_like(dst, dtype=x.dtype))
            out = out / deg.clamp(min=1)[:, None]
        elif self.aggr == "max":
            out = x.new_zeros((N, C)).scatter_reduce(0, dst[:, None].expand(-1, C), msgs, reduce="amax",
                                                     include_self=False)
        else:
            out = x.new_zeros((N, C)).scatter_reduce(0, dst[:, None].expand(-1, C), msgs, reduce="mean",
                                                     include_self=False)
        return F.normalize(self.lin_l(out) + self.lin_r(x), p=2.0, dim=-1)


class GraphSAGE(nn.Module):
    def __init__(self, ci=32, hidden=64, n_classes=7):
        super().__init__()
        self.convs = nn.ModuleList([SAGEConv(ci, hidden, "mean"), SAGEConv(hidden, hidden, "max"),
                                    SAGEConv(hidden, hidden, "smean")])
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x, edge_index, y, train_mask):
        for conv in self.convs:
            x = F.dropout(F.relu(conv(x, edge_index)), p=0.5, training=self.training)
        logits = self.head(x)
        return F.cross_entropy(logits[train_mask], y[train_mask])


# ----------------------------------------------------------------------------- two-tower retrieval

class TwoTower(nn.Module):
    def __init__(self, n_items=2000, n_tokens=500, n_tags=100, d=32, dense=8, temperature=0.05):
        super().__init__()
        self.temperature = temperature
        self.hist = nn.EmbeddingBag(n_items, d, mode="sum", include_last_offset=True)
        self.query = nn.EmbeddingBag(n_tokens, d, mode="mean", padding_idx=0)
        self.user_mlp = nn.Sequential(nn.Linear(2 * d + dense, 128), nn.ReLU(), nn.Linear(128, 64))
        self.item_id = nn.Embedding(n_items, d)
        self.item_tags = nn.EmbeddingBag(n_tags, d, mode="mean", padding_idx=0)
        self.item_mlp = nn.Sequential(nn.Linear(2 * d, 128), nn.ReLU(), nn.Linear(128, 64))

    def forward(self, hist_ids, hist_offsets, hist_weights, query_tokens, dense, item_ids, item_tags, item_logq):
        u = torch.cat([self.hist(hist_ids, hist_offsets, per_sample_weights=hist_weights),
                       self.query(query_tokens), dense], dim=1)
        u = F.normalize(self.user_mlp(u), dim=-1)
        v = F.normalize(self.item_mlp(torch.cat([self.item_id(item_ids), self.item_tags(item_tags)], dim=1)), dim=-1)
        logits = u @ v.T / self.temperature - item_logq[None, :]
        labels = torch.arange(logits.shape[0], device=logits.device)
        return F.cross_entropy(logits, labels)


# ----------------------------------------------------------------------------- CondConv / DY-Conv

class CondConv2d(nn.Module):
    def __init__(self, ci, co, k, stride=1, groups=1, experts=4, dynamic=False, temperature=30.0):
        super().__init__()
        self.ci, self.co, self.k, self.stride, self.groups = ci, co, k, stride, groups
        self.experts, self.dynamic, self.temperature = experts, dynamic, temperature
        self.route = nn.Linear(ci, experts)
        self.weight = nn.Parameter(torch.empty(experts, co, ci // groups, k, k))
        for e in range(experts):
            nn.init.kaiming_uniform_(self.weight[e], a=math.sqrt(5))
        self.bias = nn.Parameter(torch.zeros(experts, co)) if dynamic else None

    def forward(self, x):
        B, C, H, W = x.shape
        logits = self.route(F.adaptive_avg_pool2d(x, 1).flatten(1))
        r = F.softmax(logits / self.temperature, dim=1) if self.dynamic else torch.sigmoid(logits)
        w = torch.mm(r, self.weight.view(self.experts, -1)).view(B * self.co, self.ci // self.groups, self.k, self.k)
        b = torch.mm(r, self.bias).view(-1) if self.bias is not None else None
        out = F.conv2d(x.reshape(1, B * C, H, W), w, b, self.stride, self.k // 2, groups=B * self.groups)
        return out.view(B, self.co, out.shape[-2], out.shape[-1])


class CondBlock(nn.Module):
    def __init__(self, ci, co, stride, dynamic):
        super().__init__()
        self.pw1 = CondConv2d(ci, co, 1, dynamic=dynamic)
        self.bn1 = nn.BatchNorm2d(co)
        self.dw = CondConv2d(co, co, 3, stride, groups=co, dynamic=dynamic)
        self.bn2 = nn.BatchNorm2d(co)
        self.pw2 = CondConv2d(co, co, 1, dynamic=dynamic)
        self.bn3 = nn.BatchNorm2d(co)
        self.skip = ci == co and stride == 1

    def forward(self, x):
        y = F.relu(self.bn1(self.pw1(x)))
        y = F.relu(self.bn2(self.dw(y)))
        y = self.bn3(self.pw2(y))
        return F.relu(x + y) if self.skip else F.relu(y)


class CondConvNet(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 24, 3, 2, 1, bias=False), nn.BatchNorm2d(24), nn.ReLU(inplace=True))
        self.blocks = nn.Sequential(CondBlock(24, 32, 2, False), CondBlock(32, 32, 1, False),
                                    CondBlock(32, 64, 2, True), CondBlock(64, 64, 1, True))
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(64, n_classes)

    def forward(self, x, y):
        x = self.blocks(self.stem(x))
        return F.cross_entropy(self.fc(self.dropout(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))), y)


# ----------------------------------------------------------------------------- involution (RedNet)

class Involution(nn.Module):
    def __init__(self, channels, k=7, stride=1, group_channels=8, reduction=4):
        super().__init__()
        self.k, self.stride, self.channels = k, stride, channels
        self.groups = channels // group_channels
        self.conv1 = nn.Sequential(nn.Conv2d(channels, channels // reduction, 1, bias=False),
                                   nn.BatchNorm2d(channels // reduction), nn.ReLU(inplace=True))
        self.conv2 = nn.Conv2d(channels // reduction, k * k * self.groups, 1)
        self.avgpool = nn.AvgPool2d(stride, stride) if stride > 1 else nn.Identity()
        self.unfold = nn.Unfold(k, 1, (k - 1) // 2, stride)

    def forward(self, x):
        weight = self.conv2(self.conv1(self.avgpool(x)))
        b, c, h, w = weight.shape
        weight = weight.view(b, self.groups, self.k * self.k, h, w).unsqueeze(2)
        out = self.unfold(x).view(b, self.groups, self.channels // self.groups, self.k * self.k, h, w)
        return (weight * out).sum(dim=3).view(b, self.channels, h, w)


class InvBottleneck(nn.Module):
    def __init__(self, ci, co, stride=1):
        super().__init__()
        mid = co // 2
        self.conv1 = nn.Sequential(nn.Conv2d(ci, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True))
        self.inv = Involution(mid, 7, stride)
        self.bn2 = nn.BatchNorm2d(mid)
        self.conv3 = nn.Sequential(nn.Conv2d(mid, co, 1, bias=False), nn.BatchNorm2d(co))
        self.down = (nn.Sequential(nn.AvgPool2d(stride, stride) if stride > 1 else nn.Identity(),
                                   nn.Conv2d(ci, co, 1, bias=False), nn.BatchNorm2d(co))
                     if stride != 1 or ci != co else None)

    def forward(self, x):
        y = self.conv3(F.relu(self.bn2(self.inv(self.conv1(x)))))
        return F.relu(y + (x if self.down is None else self.down(x)))


class SoftSplitMerge(nn.Module):
    """Overlapping patches (F.unfold), a Linear per patch, F.fold back, / the overlap count."""

    def __init__(self, c, k=4, s=2, p=1):
        super().__init__()
        self.k, self.s, self.p = k, s, p
        self.proj = nn.Linear(c * k * k, c * k * k)
        self.norm = nn.LayerNorm(c * k * k)

    def forward(self, x):
        H, W = x.shape[-2:]
        u = F.unfold(x, self.k, stride=self.s, padding=self.p).transpose(1, 2)       # (B, L, C*k*k)
        u = self.proj(self.norm(u)).transpose(1, 2)
        out = F.fold(u, (H, W), self.k, stride=self.s, padding=self.p)
        ones = torch.ones((1, 1, H, W), dtype=x.dtype)
        count = F.fold(F.unfold(ones, self.k, stride=self.s, padding=self.p), (H, W), self.k, stride=self.s,
                       padding=self.p)
        return x + out / count


class RedNetTiny(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                                  Involution(16, 3, 1, 8, 4), nn.BatchNorm2d(16), nn.ReLU(inplace=True),
                                  nn.Conv2d(16, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True),
                                  nn.MaxPool2d(3, 2, 1))
        self.layer1 = nn.Sequential(InvBottleneck(32, 64), InvBottleneck(64, 64))
        self.mix = SoftSplitMerge(64)
        self.layer2 = nn.Sequential(InvBottleneck(64, 128, 2), InvBottleneck(128, 128))
        self.fc = nn.Linear(128, n_classes)

    def forward(self, x, y):
        x = self.layer2(self.mix(self.layer1(self.stem(x))))
        return F.cross_entropy(self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1)), y)


# ----------------------------------------------------------------------------- PatchTST

class RevIN(nn.Module):
    def __init__(self, c, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.affine_weight = nn.Parameter(torch.ones(c))
        self.affine_bias = nn.Parameter(torch.zeros(c))

    def norm(self, x):
        self.mean = torch.mean(x, dim=1, keepdim=True).detach()
        self.stdev = torch.sqrt(torch.var(x, dim=1, keepdim=True, unbiased=False) + self.eps).detach()
        return (x - self.mean) / self.stdev * self.affine_weight + self.affine_bias

    def denorm(self, x):
        x = (x - self.affine_bias) / (self.affine_weight + self.eps * self.eps)
        return x * self.stdev + self.mean


class PatchTST(nn.Module):
    def __init__(self, c_in=7, seq_len=128, pred_len=24, patch_len=16, stride=8, d_model=64, heads=4, layers=3):
        super().__init__()
        self.patch_len, self.stride = patch_len, stride
        n_patch = (seq_len - patch_len) // stride + 1 + 1
        self.revin = RevIN(c_in)
        self.pad = nn.ReplicationPad1d((0, stride))
        self.W_P = nn.Linear(patch_len, d_model)
        self.W_pos = nn.Parameter(torch.empty(n_patch, d_model).uniform_(-0.02, 0.02))
        self.drop = nn.Dropout(0.1)
        layer = nn.TransformerEncoderLayer(d_model, heads, 128, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.flatten = nn.Flatten(start_dim=-2)
        self.head = nn.Linear(d_model * n_patch, pred_len)
        self.head_drop = nn.Dropout(0.1)

    def forward(self, x, y):
        B, L, C = x.shape
        x = self.revin.norm(x).permute(0, 2, 1)                                 # (B, C, L)
        x = self.pad(x).unfold(dimension=-1, size=self.patch_len, step=self.stride)  # (B, C, N, P)
        n = x.shape[2]
        z = self.W_P(x).reshape(B * C, n, -1)
        z = self.encoder(self.drop(z + self.W_pos))
        z = z.reshape(B, C, n, -1)
        out = self.head_drop(self.head(self.flatten(z))).permute(0, 2, 1)       # (B, pred, C)
        return F.mse_loss(self.revin.denorm(out), y)


# ----------------------------------------------------------------------------- Demucs

class Demucs(nn.Module):
    def __init__(self, chin=1, sources=2, hidden=16, depth=4, kernel=8, stride=4, growth=2, floor=1e-3):
        super().__init__()
        self.depth, self.kernel, self.stride, self.floor, self.sources = depth, kernel, stride, floor, sources
        self.encoder, self.decoder = nn.ModuleList(), nn.ModuleList()
        ci, chout = chin, chin * sources
        for i in range(depth):
            self.encoder.append(nn.Sequential(nn.Conv1d(ci, hidden, kernel, stride), nn.ReLU(),
                                              nn.Conv1d(hidden, 2 * hidden, 1), nn.GLU(1)))
            dec = [nn.Conv1d(hidden, 2 * hidden, 1), nn.GLU(1), nn.ConvTranspose1d(hidden, chout, kernel, stride)]
            if i > 0:
                dec.append(nn.ReLU())
            self.decoder.insert(0, nn.Sequential(*dec))
            chout, ci, hidden = hidden, hidden, growth * hidden
        self.lstm = nn.LSTM(ci, ci, num_layers=2, bidirectional=True)
        self.lstm_linear = nn.Linear(2 * ci, ci)

    def valid_length(self, length):
        for _ in range(self.depth):
            length = math.ceil((length - self.kernel) / self.stride) + 1
            length = max(length, 1)
        for _ in range(self.depth):
            length = (length - 1) * self.stride + self.kernel
        return int(length)

    def forward(self, mix, target):
        length = mix.shape[-1]
        mono = mix.mean(dim=1, keepdim=True)
        std = mono.std(dim=-1, keepdim=True)
        x = mix / (self.floor + std)
        x = F.pad(x, (0, self.valid_length(length) - length))
        saved = []
        for enc in self.encoder:
            x = enc(x)
            saved.append(x)
        x, _ = self.lstm(x.permute(2, 0, 1))
        x = self.lstm_linear(x).permute(1, 2, 0)
        for dec in self.decoder:
            skip = saved.pop(-1)
            x = dec(x + skip[..., : x.shape[-1]])
        x = x[..., :length] * std
        x = x.view(x.shape[0], self.sources, mix.shape[1], length)
        return F.l1_loss(x, target)


# ----------------------------------------------------------------------------- WGAN-GP

class WGANGP(nn.Module):
    def __init__(self, z_dim=32, c=32):
        super().__init__()
        self.G = nn.Sequential(nn.Linear(z_dim, 4 * 4 * 2 * c), nn.Unflatten(1, (2 * c, 4, 4)), nn.ReLU(),
                               nn.ConvTranspose2d(2 * c, c, 4, 2, 1), nn.BatchNorm2d(c), nn.ReLU(),
                               nn.ConvTranspose2d(c, 3, 4, 2, 1), nn.Tanh())
        self.D = nn.Sequential(nn.Conv2d(3, c, 4, 2, 1), nn.LeakyReLU(0.2), nn.Conv2d(c, 2 * c, 4, 2, 1),
                               nn.LeakyReLU(0.2), nn.Flatten(), nn.Linear(2 * c * 4 * 4, 1))
        self.lambda_gp = 10.0

    def gradient_penalty(self, real, fake, alpha):
        interpolates = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
        d_int = self.D(interpolates)
        grads = torch.autograd.grad(outputs=d_int, inputs=interpolates, grad_outputs=torch.ones_like(d_int),
                                    create_graph=True, retain_graph=True, only_inputs=True)[0]
        return ((grads.reshape(grads.shape[0], -1).norm(2, dim=1) - 1) ** 2).mean()

    def forward(self, real, z, alpha):
        fake = self.G(z).detach()
        return (-self.D(real).mean() + self.D(fake).mean()
                + self.lambda_gp * self.gradient_penalty(real, fake, alpha))


NAMES = ["segformer", "yolov5_lite", "deeplabv3", "raft_small", "hrnet_small", "informer", "gp_dkl", "graphsage",
         "two_tower", "condconv", "involution", "patchtst", "demucs", "wgan_gp"]


def yolo_targets(B, side, g, n_classes=5):
    """Per level: a random positive mask (B, 3, ny, nx), target boxes (xy offsets in (-0.5, 1.5), wh in grid
    units) and class ids, dense over the grid (read at the mask)."""
    out = []
    for s in YOLOv5Lite.STRIDES:
        n = side // s
        mask = torch.rand((B, 3, n, n), generator=g) < 0.1
        mask[0, 0, 0, 0] = True
        tb = torch.cat([2 * torch.rand((B, 3, n, n, 2), generator=g, dtype=torch.float64) - 0.5,
                        0.5 + 3 * torch.rand((B, 3, n, n, 2), generator=g, dtype=torch.float64)], -1)
        out.append((mask, tb, torch.randint(0, n_classes, (B, 3, n, n), generator=g)))
    return out


def gaussian_heatmaps(B, K, H, W, g, sigma=2.0):
    cy = torch.randint(0, H, (B, K, 1, 1), generator=g).double()
    cx = torch.randint(0, W, (B, K, 1, 1), generator=g).double()
    ys = torch.arange(H, dtype=torch.float64).view(1, 1, H, 1)
    xs = torch.arange(W, dtype=torch.float64).view(1, 1, 1, W)
    return torch.exp(-((ys - cy) ** 2 + (xs - cx) ** 2) / (2 * sigma ** 2))


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    if name == "segformer":
        side = max(64, S // 32 * 32)                                            # 96 at --image 96
        labels = torch.randint(0, 19, (B, side, side), generator=g)
        labels[:, :4] = 255
        labels[:, :, -4:] = 255
        return SegFormer(), [common.float_input((B, 3, side, side), dtype, g), labels]
    if name == "yolov5_lite":
        side = max(64, S // 32 * 32)
        t = yolo_targets(B, side, g)
        return YOLOv5Lite(), ([common.float_input((B, 3, side, side), dtype, g)] + [m for m, _, _ in t]
                              + [tb.to(dtype) for _, tb, _ in t] + [c for _, _, c in t])
    if name == "deeplabv3":
        side = max(64, S // 32 * 32)
        target = torch.randint(0, 11, (B, side, side), generator=g)
        target[:, -6:] = 255
        return DeepLabV3(), [common.float_input((B, 3, side, side), dtype, g), target]
    if name == "raft_small":
        side = max(64, S // 32 * 32)
        im1 = 255 * torch.rand((B, 3, side, side), generator=g, dtype=torch.float64)
        im2 = torch.roll(im1, shifts=(2, 3), dims=(2, 3)) + 5 * torch.randn((B, 3, side, side), generator=g,
                                                                            dtype=torch.float64)
        flow = 3 * torch.randn((B, 2, side, side), generator=g, dtype=torch.float64)
        return RAFTSmall(), [im1.to(dtype), im2.to(dtype), flow.to(dtype)]
    if name == "hrnet_small":
        side = max(64, S // 32 * 32)
        K = 17
        target = gaussian_heatmaps(B, K, side // 4, side // 4, g)
        tw = (torch.rand((B, K, 1), generator=g) < 0.8).double()
        return HRNetSmall(K), [common.float_input((B, 3, side, side), dtype, g), target.to(dtype), tw.to(dtype)]
    if name == "informer":
        seq, label, pred, c, m = 96, 48, 24, 7, 4
        series = torch.cumsum(torch.randn((B, seq + pred, c), generator=g, dtype=torch.float64), 1) * 0.1
        marks = torch.rand((B, seq + pred, m), generator=g, dtype=torch.float64) - 0.5
        x_dec = torch.cat([series[:, seq - label:seq], torch.zeros((B, pred, c), dtype=torch.float64)], 1)
        return Informer(c, m, seq, label, pred), [series[:, :seq].to(dtype), marks[:, :seq].to(dtype), x_dec.to(dtype),
                                                  marks[:, seq - label:].to(dtype), series[:, seq:].to(dtype)]
    if name == "gp_dkl":
        n = 64 * B
        x = torch.rand((n, 8), generator=g, dtype=torch.float64) * 2 - 1
        y = torch.sin(3 * x[:, 0]) + 0.5 * x[:, 1] ** 2 + 0.1 * torch.randn((n,), generator=g, dtype=torch.float64)
        return DKLGP(), [x.to(dtype), y.to(dtype)]
    if name == "graphsage":
        N, E = 128 * B, 1024 * B
        src = torch.randint(0, N, (E,), generator=g)
        dst = torch.randint(0, N, (E,), generator=g)
        return GraphSAGE(), [common.float_input((N, 32), dtype, g), torch.stack([src, dst]),
                             common.token_ids((N,), 7, g), torch.rand((N,), generator=g) < 0.3]
    if name == "two_tower":
        Bt = 64 * B
        lens = torch.randint(1, 12, (Bt,), generator=g)
        offsets = torch.cat([torch.zeros(1, dtype=torch.int64), torch.cumsum(lens, 0)])    # B + 1 offsets
        hist = torch.randint(0, 2000, (int(offsets[-1]),), generator=g)
        weights = torch.rand((int(offsets[-1]),), generator=g, dtype=torch.float64)
        q = torch.randint(1, 500, (Bt, 6), generator=g)
        q[:, 4:] *= (torch.rand((Bt, 1), generator=g) < 0.5).long()             # padding_idx 0 on some
        items = torch.randint(0, 2000, (Bt,), generator=g)
        tags = torch.randint(0, 100, (Bt, 4), generator=g)
        logq = torch.log(torch.rand((Bt,), generator=g, dtype=torch.float64) * 1e-3 + 1e-4)
        return TwoTower(), [hist, offsets, weights.to(dtype), q, common.float_input((Bt, 8), dtype, g), items, tags,
                            logq.to(dtype)]
    if name == "condconv":
        side = max(32, (S * 2 // 3) // 16 * 16)                                 # 64 at --image 96
        return CondConvNet(), [common.float_input((B, 3, side, side), dtype, g), common.token_ids((B,), 10, g)]
    if name == "involution":
        side = max(32, (S * 2 // 3) // 16 * 16)
        return RedNetTiny(), [common.float_input((B, 3, side, side), dtype, g), common.token_ids((B,), 10, g)]
    if name == "patchtst":
        L, pred, c = 128, 24, 7
        series = torch.cumsum(torch.randn((B, L + pred, c), generator=g, dtype=torch.float64), 1) * 0.1 + 2.0
        return PatchTST(c, L, pred), [series[:, :L].to(dtype), series[:, L:].to(dtype)]
    if name == "demucs":
        n = 4000
        src = 0.3 * torch.randn((B, 2, 1, n), generator=g, dtype=torch.float64)
        return Demucs(), [src.sum(1).to(dtype), src.to(dtype)]
    if name == "wgan_gp":
        return WGANGP(), [(2 * torch.rand((B, 3, 16, 16), generator=g, dtype=torch.float64) - 1).to(dtype),
                          common.float_input((B, 32), dtype, g),
                          torch.rand((B, 1, 1, 1), generator=g, dtype=torch.float64).to(dtype)]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen13.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
