#!/usr/bin/env python3
"""unseen11.py — an eleventh set of models nobody tuned rkmate for
(after tools/models/unseen.py ... unseen10.py), all small and written as users
of torch 2.x write them today.  Each has idioms the other sets do not:

A Tacotron 2 (NVIDIA's tacotron2): an embedding + Conv1d/BatchNorm1d encoder
into a bidirectional nn.LSTM, a prenet whose dropout is always on
(F.dropout(training=True)), location-sensitive attention (a Conv1d over
cat(attention_weights, attention_weights_cum), processed memory computed
once, energies v(tanh(q + loc + memory)) masked_fill-ed with -inf at the
padded characters, softmax, bmm context), two nn.LSTMCell decoders unrolled
with teacher forcing over a go frame cat-ed before the target frames, states
from memory.new_zeros, F.dropout on the LSTMCell states, the cumulative
attention updated out of place, a postnet of Conv1d + BatchNorm1d + tanh with
dropout, the mel MSE before and after the postnet plus the stop-gate
BCE-with-logits, and the alignments as a detached output.

A wav2vec 2.0 pre-training step (HF Wav2Vec2ForPreTraining): a conv feature
extractor whose first layer has GroupNorm(C, C), a feature projection
(LayerNorm, Linear), time masking by HF's in-place boolean index
hidden[mask_time_indices] = masked_spec_embed, a grouped positional Conv1d
with torch.nn.utils.parametrizations.weight_norm(dim=2) and SamePad's
[:, :, :-1], post-LN transformer layers, a Gumbel vector quantizer
(F.gumbel_softmax(tau=2, hard=True) over G groups, codevectors by a
broadcast product summed over the codebook axis, the perplexity of the
masked soft distribution), negatives picked by indexing the flattened
quantized features with a sampled int64 input, F.cosine_similarity against
cat([positive, negatives]) / temperature, logits[1:][neg_is_pos] = -inf,
cross-entropy with ignore_index -100 on unmasked frames (reduction="sum"),
and the diversity loss.

A SchNet (PyG's SchNet) on an int64 edge_index input: edge lengths by
(pos[row] - pos[col]).norm(dim=-1), GaussianSmearing (an offset buffer,
coeff * dist^2 through exp), CosineCutoff, continuous-filter convolutions
(filter MLP with ShiftedSoftplus = softplus - log 2) whose messages
x[col] * W are summed by src.new_zeros(...).scatter_add_(0,
index.view(-1, 1).expand_as(src), src), an atomref embedding, per-molecule
energies by zeros(n_mol, 1).index_add_(0, batch, h), and a dipole head
with per-molecule mean-neutralised charges (counts by index_add_ of ones,
mean[batch] gathered back), loss on energy and |dipole|.

A TabNet (dreamquark's pytorch-tabnet): categorical embeddings cat-ed with
the numerical columns, ghost batch normalisation (x.chunk(ceil(N / vbs)),
one BatchNorm1d on each virtual batch, torch.cat), GLU layers written as
x[:, :d] * sigmoid(x[:, d:]), GLU blocks with a shared first layer and
x = (x + glu(x)) * torch.sqrt(torch.FloatTensor([0.5])), an attentive
transformer with prior scales and a plain-op sparsemax (sort descending,
cumsum, 1 + k z > cumsum, max, clamp at zero), the prior updated by
(gamma - M) * prior, the mask entropy regulariser, and the decision outputs
summed over steps.

A DeepFM (DeepCTR-Torch style): single-valued fields looked up in one
nn.Embedding through a field-offset buffer, two multi-hot fields through
nn.EmbeddingBag(mode="sum") with a flat id input and offsets (one with
per_sample_weights), the FM first-order term from an Embedding(total, 1),
the second-order term 0.5 * sum((sum e)^2 - sum e^2), a deep MLP over the
flattened embeddings cat-ed with dense columns, sigmoid then
F.binary_cross_entropy, and an L2 penalty on the embedding tables.

A gMLP / FNet language model (lucidrains' g-mlp-pytorch, HF FNet): a
spatial gating unit (x.chunk(2, dim=-1), LayerNorm on the gate, a causal
token-axis projection by F.conv1d with a Conv1d weight initialised
uniform(-eps, eps), bias ones and a triu mask buffer applied by
masked_fill), a tiny single-head attention added to the gate ("aMLP"), FNet
mixing by torch.fft.fft(torch.fft.fft(x, dim=-1), dim=-2).real, tied input /
output embeddings (F.linear with the embedding weight) and a shifted
next-token cross-entropy.

A Nyströmformer (lucidrains' nystrom-attention): the sequence front-padded
to a multiple of the landmarks with F.pad(value=0) and a padding mask,
landmarks by reshape + sum / divisor, three softmax kernels through
torch.einsum, the iterative Moore-Penrose pseudo-inverse (z scaled by
torch.max of the row and column sums, six iterations of
0.25 z (13 I - xz (15 I - xz (7 I - xz)))), a depthwise Conv2d residual on
V over the (heads, n, 1) layout, and the output sliced back to n.

A SAM-style prompt encoder and mask decoder (segment-anything): a hand-written
LayerNorm2d, random-Fourier positional encoding of the point prompts and of
a dense grid (ones.cumsum), label-dependent point embeddings added by
in-place boolean indexing (pe[labels == -1] = 0, pe[labels == 1] += w), the
image embedding torch.repeat_interleave-d over the prompts, a two-way
transformer (token self-attention, token-to-image and image-to-token
cross-attention with downsampled heads), ConvTranspose2d upscaling with a
LayerNorm2d, hypernetwork MLPs stacked into per-mask weights applied by
matmul, an IoU head, masks F.interpolate-d to the ground truth, focal +
dice loss of the best of three masks (min over the mask axis) and the IoU
MSE against the IoU computed under no_grad.

A NeRF with hierarchical sampling (nerf-pytorch): stratified samples with
torch.rand perturbation, raw2outputs (dists cat-ed with 1e10, alpha from
relu(sigma) * dists, weights = alpha * torch.cumprod(cat(ones, 1 - alpha +
1e-10))[..., :-1]), sample_pdf on the detached coarse weights (cumsum of the
normalised pdf, torch.searchsorted(right=True), below / above by max / min,
gather on an expanded cdf, a torch.where on small denominators, linear
interpolation), torch.sort of the merged depths, coarse and fine MLPs with a
skip cat, and coarse + fine MSE with the PSNR as a detached output.

A Temporal Fusion Transformer (pytorch-forecasting): gated residual networks
(ELU, a context Linear without bias, GLU by F.glu, add & LayerNorm with a
resampling skip), variable selection networks (per-variable prescaler
Linears, a flattened GRN whose softmax weights the stacked per-variable
GRNs), static covariate encoders feeding an nn.LSTM encoder / decoder's
(h0, c0) and the enrichment context, interpretable multi-head attention with
one shared value projection, per-head q / k Linears, a causal mask,
torch.stack of the heads and their mean, and the quantile (pinball) loss
torch.max((q - 1) e, q e) on a quantile buffer.

Knowledge distillation with R-Drop: a frozen teacher (requires_grad_(False),
kept in eval mode by an overridden train()) run under torch.no_grad(), a
student run once on torch.cat([x, x]) so that its two dropout passes differ,
label-smoothed cross-entropy on both halves, R-Drop's symmetric
F.kl_div(log_target=True, reduction="batchmean"), Hinton's temperature KD
F.kl_div(log_softmax(s / T), softmax(t / T)) * T^2, and a FitNets hint (a
1x1 Conv2d adapter, MSE to the teacher's features).

A DANN domain-adaptation step: a gradient reversal layer written as a custom
torch.autograd.Function (forward x.view_as(x), backward -alpha * grad) as
every DANN code base does, between the feature extractor and the domain
classifier; label cross-entropy on the source half and domain BCE on both.
torch.jit.trace records the Function as a prim::PythonOp and refuses to save
it ("Could not export Python function call"), so this model tests the
exporter's refusal, not rkmate's (torch.export, by contrast, inlines the
Function's forward, a view_as, and drops its backward without a word).

A Sketch-RNN (magenta's sketch-rnn, PyTorch ports): a bidirectional nn.LSTM
encoder whose final (h_n) directions are cat-ed into mu / sigma_hat, z by
the reparameterisation with torch.randn_like, decoder (h0, c0) from
torch.tanh(Linear(z)).split, z cat-ed onto every decoder input step, a
bivariate Gaussian mixture density output (softmax mixture weights, exp
sigmas, tanh rho), the mixture NLL through torch.logsumexp of the per
component log densities, the pen-state cross-entropy, a mask of the real
strokes, and the KL term clamped from below by torch.clamp(min=kl_min).

Exported like the zoo (tools/models/common.export), with the zoo's options,
so that `tools/bench/zoo.py --models-script tools/models/unseen11.py` runs
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


# ----------------------------------------------------------------------------- Tacotron 2

class Prenet(nn.Module):
    def __init__(self, in_dim, sizes):
        super().__init__()
        dims = [in_dim] + sizes[:-1]
        self.layers = nn.ModuleList([nn.Linear(i, o, bias=False) for i, o in zip(dims, sizes)])

    def forward(self, x):
        for linear in self.layers:
            x = F.dropout(F.relu(linear(x)), p=0.5, training=True)
        return x


class LocationLayer(nn.Module):
    def __init__(self, n_filters, kernel, attention_dim):
        super().__init__()
        self.location_conv = nn.Conv1d(2, n_filters, kernel, padding=(kernel - 1) // 2, bias=False)
        self.location_dense = nn.Linear(n_filters, attention_dim, bias=False)

    def forward(self, attention_weights_cat):
        processed = self.location_conv(attention_weights_cat).transpose(1, 2)
        return self.location_dense(processed)


class LocationAttention(nn.Module):
    def __init__(self, rnn_dim, emb_dim, attention_dim=32, n_filters=8, kernel=7):
        super().__init__()
        self.query_layer = nn.Linear(rnn_dim, attention_dim, bias=False)
        self.memory_layer = nn.Linear(emb_dim, attention_dim, bias=False)
        self.v = nn.Linear(attention_dim, 1, bias=False)
        self.location_layer = LocationLayer(n_filters, kernel, attention_dim)
        self.score_mask_value = -float("inf")

    def get_alignment_energies(self, query, processed_memory, attention_weights_cat):
        processed_query = self.query_layer(query.unsqueeze(1))
        processed_attention_weights = self.location_layer(attention_weights_cat)
        energies = self.v(torch.tanh(processed_query + processed_attention_weights + processed_memory))
        return energies.squeeze(-1)

    def forward(self, attention_hidden_state, memory, processed_memory, attention_weights_cat, mask):
        alignment = self.get_alignment_energies(attention_hidden_state, processed_memory, attention_weights_cat)
        alignment = alignment.masked_fill(mask, self.score_mask_value)
        attention_weights = F.softmax(alignment, dim=1)
        attention_context = torch.bmm(attention_weights.unsqueeze(1), memory).squeeze(1)
        return attention_context, attention_weights


class Postnet(nn.Module):
    def __init__(self, n_mel, dim=32, kernel=5, n=3):
        super().__init__()
        chans = [n_mel] + [dim] * (n - 1) + [n_mel]
        self.convolutions = nn.ModuleList([
            nn.Sequential(nn.Conv1d(chans[i], chans[i + 1], kernel, padding=(kernel - 1) // 2),
                          nn.BatchNorm1d(chans[i + 1])) for i in range(n)])

    def forward(self, x):
        for i in range(len(self.convolutions) - 1):
            x = F.dropout(torch.tanh(self.convolutions[i](x)), 0.5, self.training)
        return F.dropout(self.convolutions[-1](x), 0.5, self.training)


class Tacotron2(nn.Module):
    def __init__(self, n_symbols=40, emb=64, n_mel=20, prenet_dim=32, attn_rnn=64, dec_rnn=64):
        super().__init__()
        self.n_mel, self.attn_rnn_dim, self.dec_rnn_dim, self.emb = n_mel, attn_rnn, dec_rnn, emb
        self.embedding = nn.Embedding(n_symbols, emb)
        std = math.sqrt(2.0 / (n_symbols + emb))
        val = math.sqrt(3.0) * std
        self.embedding.weight.data.uniform_(-val, val)
        self.enc_convs = nn.ModuleList([nn.Sequential(nn.Conv1d(emb, emb, 5, padding=2), nn.BatchNorm1d(emb))
                                        for _ in range(2)])
        self.enc_lstm = nn.LSTM(emb, emb // 2, 1, batch_first=True, bidirectional=True)
        self.prenet = Prenet(n_mel, [prenet_dim, prenet_dim])
        self.attention_rnn = nn.LSTMCell(prenet_dim + emb, attn_rnn)
        self.attention_layer = LocationAttention(attn_rnn, emb)
        self.decoder_rnn = nn.LSTMCell(attn_rnn + emb, dec_rnn, 1)
        self.linear_projection = nn.Linear(dec_rnn + emb, n_mel)
        self.gate_layer = nn.Linear(dec_rnn + emb, 1)
        self.postnet = Postnet(n_mel)

    def encode(self, text):
        x = self.embedding(text).transpose(1, 2)
        for conv in self.enc_convs:
            x = F.dropout(F.relu(conv(x)), 0.5, self.training)
        self.enc_lstm.flatten_parameters()
        outputs, _ = self.enc_lstm(x.transpose(1, 2))
        return outputs

    def forward(self, text, text_mask, mels, gate_target):
        memory = self.encode(text)                                               # B, L, E
        B, L = text.shape
        mask = ~text_mask
        decoder_input = memory.new_zeros(B, self.n_mel).unsqueeze(0)             # go frame
        decoder_inputs = torch.cat((decoder_input, mels.permute(2, 0, 1)), dim=0)  # T+1, B, n_mel
        decoder_inputs = self.prenet(decoder_inputs)
        attention_hidden = memory.new_zeros(B, self.attn_rnn_dim)
        attention_cell = memory.new_zeros(B, self.attn_rnn_dim)
        decoder_hidden = memory.new_zeros(B, self.dec_rnn_dim)
        decoder_cell = memory.new_zeros(B, self.dec_rnn_dim)
        attention_weights = memory.new_zeros(B, L)
        attention_weights_cum = memory.new_zeros(B, L)
        attention_context = memory.new_zeros(B, self.emb)
        processed_memory = self.attention_layer.memory_layer(memory)
        mel_outputs, gate_outputs, alignments = [], [], []
        while len(mel_outputs) < decoder_inputs.size(0) - 1:
            decoder_input = decoder_inputs[len(mel_outputs)]
            cell_input = torch.cat((decoder_input, attention_context), -1)
            attention_hidden, attention_cell = self.attention_rnn(cell_input, (attention_hidden, attention_cell))
            attention_hidden = F.dropout(attention_hidden, 0.1, self.training)
            attention_weights_cat = torch.cat((attention_weights.unsqueeze(1), attention_weights_cum.unsqueeze(1)),
                                              dim=1)
            attention_context, attention_weights = self.attention_layer(
                attention_hidden, memory, processed_memory, attention_weights_cat, mask)
            attention_weights_cum = attention_weights_cum + attention_weights
            decoder_input = torch.cat((attention_hidden, attention_context), -1)
            decoder_hidden, decoder_cell = self.decoder_rnn(decoder_input, (decoder_hidden, decoder_cell))
            decoder_hidden = F.dropout(decoder_hidden, 0.1, self.training)
            hidden_context = torch.cat((decoder_hidden, attention_context), dim=1)
            mel_outputs += [self.linear_projection(hidden_context).squeeze(1)]
            gate_outputs += [self.gate_layer(hidden_context).squeeze(1)]
            alignments += [attention_weights]
        alignments = torch.stack(alignments).transpose(0, 1)
        gate_outputs = torch.stack(gate_outputs).transpose(0, 1).contiguous().squeeze(-1)
        mel_outputs = torch.stack(mel_outputs).transpose(0, 1).contiguous().transpose(1, 2)   # B, n_mel, T
        mel_outputs_postnet = mel_outputs + self.postnet(mel_outputs)
        mel_loss = F.mse_loss(mel_outputs, mels) + F.mse_loss(mel_outputs_postnet, mels)
        gate_loss = F.binary_cross_entropy_with_logits(gate_outputs, gate_target)
        return mel_loss + gate_loss, alignments.detach()


# ----------------------------------------------------------------------------- wav2vec 2.0

class Wav2Vec2FeatureEncoder(nn.Module):
    def __init__(self, dim=64, layers=((10, 5), (3, 2), (3, 2), (2, 2))):
        super().__init__()
        convs = []
        for i, (k, s) in enumerate(layers):
            conv = nn.Conv1d(1 if i == 0 else dim, dim, k, stride=s, bias=False)
            convs.append(nn.ModuleDict({"conv": conv, "layer_norm": nn.GroupNorm(dim, dim, affine=True)})
                         if i == 0 else nn.ModuleDict({"conv": conv}))
        self.conv_layers = nn.ModuleList(convs)

    def forward(self, input_values):
        hidden_states = input_values[:, None]
        for layer in self.conv_layers:
            hidden_states = layer["conv"](hidden_states)
            if "layer_norm" in layer:
                hidden_states = layer["layer_norm"](hidden_states)
            hidden_states = F.gelu(hidden_states)
        return hidden_states


class Wav2Vec2PositionalConvEmbedding(nn.Module):
    def __init__(self, dim, kernel=16, groups=4):
        super().__init__()
        self.conv = nn.Conv1d(dim, dim, kernel_size=kernel, padding=kernel // 2, groups=groups)
        self.conv = nn.utils.parametrizations.weight_norm(self.conv, name="weight", dim=2)
        self.num_pad_remove = 1 if kernel % 2 == 0 else 0

    def forward(self, hidden_states):
        hidden_states = self.conv(hidden_states.transpose(1, 2))
        if self.num_pad_remove > 0:
            hidden_states = hidden_states[:, :, : -self.num_pad_remove]
        return F.gelu(hidden_states).transpose(1, 2)


class Wav2Vec2EncoderLayer(nn.Module):
    def __init__(self, dim, heads=4, ff=192):
        super().__init__()
        self.heads, self.head_dim = heads, dim // heads
        self.scaling = self.head_dim ** -0.5
        self.q_proj = nn.Linear(dim, dim)
        self.k_proj = nn.Linear(dim, dim)
        self.v_proj = nn.Linear(dim, dim)
        self.out_proj = nn.Linear(dim, dim)
        self.layer_norm = nn.LayerNorm(dim)
        self.intermediate_dense = nn.Linear(dim, ff)
        self.output_dense = nn.Linear(ff, dim)
        self.final_layer_norm = nn.LayerNorm(dim)
        self.dropout = nn.Dropout(0.1)

    def _shape(self, t, T, B):
        return t.view(B, T, self.heads, self.head_dim).transpose(1, 2).contiguous()

    def forward(self, hidden_states):
        B, T, D = hidden_states.shape
        attn_residual = hidden_states
        q = self._shape(self.q_proj(hidden_states) * self.scaling, T, B).view(B * self.heads, T, self.head_dim)
        k = self._shape(self.k_proj(hidden_states), T, B).view(B * self.heads, T, self.head_dim)
        v = self._shape(self.v_proj(hidden_states), T, B).view(B * self.heads, T, self.head_dim)
        attn_weights = F.softmax(torch.bmm(q, k.transpose(1, 2)), dim=-1)
        attn_output = torch.bmm(F.dropout(attn_weights, p=0.1, training=self.training), v)
        attn_output = attn_output.view(B, self.heads, T, self.head_dim).transpose(1, 2).reshape(B, T, D)
        hidden_states = attn_residual + self.dropout(self.out_proj(attn_output))
        hidden_states = self.layer_norm(hidden_states)
        ff = self.output_dense(self.dropout(F.gelu(self.intermediate_dense(hidden_states))))
        return self.final_layer_norm(hidden_states + self.dropout(ff))


class Wav2Vec2GumbelVectorQuantizer(nn.Module):
    def __init__(self, in_dim, codevector_dim=64, groups=2, num_vars=32):
        super().__init__()
        self.num_groups, self.num_vars = groups, num_vars
        self.codevectors = nn.Parameter(torch.FloatTensor(1, groups * num_vars, codevector_dim // groups))
        self.weight_proj = nn.Linear(in_dim, groups * num_vars)
        self.temperature = 2.0
        nn.init.uniform_(self.codevectors)
        self.weight_proj.weight.data.normal_(mean=0.0, std=1)
        self.weight_proj.bias.data.zero_()

    @staticmethod
    def _compute_perplexity(probs, mask):
        mask_extended = mask.flatten()[:, None, None].expand(probs.shape)
        probs = torch.where(mask_extended, probs, torch.zeros_like(probs))
        marginal_probs = probs.sum(dim=0) / mask.sum()
        return torch.exp(-torch.sum(marginal_probs * torch.log(marginal_probs + 1e-7), dim=-1)).sum()

    def forward(self, hidden_states, mask_time_indices):
        B, T, D = hidden_states.shape
        hidden_states = self.weight_proj(hidden_states)
        hidden_states = hidden_states.view(B * T * self.num_groups, -1)
        codevector_probs = F.gumbel_softmax(hidden_states.float(), tau=self.temperature, hard=True)
        codevector_probs = codevector_probs.type_as(hidden_states)
        codevector_soft_dist = torch.softmax(hidden_states.view(B * T, self.num_groups, -1).float(), dim=-1)
        perplexity = self._compute_perplexity(codevector_soft_dist, mask_time_indices)
        codevector_probs = codevector_probs.view(B * T, -1)
        codevectors_per_group = codevector_probs.unsqueeze(-1) * self.codevectors
        codevectors = codevectors_per_group.view(B * T, self.num_groups, self.num_vars, -1)
        codevectors = codevectors.sum(-2).view(B, T, -1)
        return codevectors, perplexity


class Wav2Vec2Lite(nn.Module):
    def __init__(self, conv_dim=64, dim=96, layers=2, proj_dim=48, codevector_dim=64):
        super().__init__()
        self.feature_extractor = Wav2Vec2FeatureEncoder(conv_dim)
        self.fp_layer_norm = nn.LayerNorm(conv_dim)
        self.fp_projection = nn.Linear(conv_dim, dim)
        self.fp_dropout = nn.Dropout(0.1)
        self.masked_spec_embed = nn.Parameter(torch.Tensor(dim).uniform_())
        self.pos_conv_embed = Wav2Vec2PositionalConvEmbedding(dim)
        self.enc_layer_norm = nn.LayerNorm(dim)
        self.layers = nn.ModuleList([Wav2Vec2EncoderLayer(dim) for _ in range(layers)])
        self.dropout_features = nn.Dropout(0.1)
        self.quantizer = Wav2Vec2GumbelVectorQuantizer(conv_dim, codevector_dim)
        self.project_hid = nn.Linear(dim, proj_dim)
        self.project_q = nn.Linear(codevector_dim, proj_dim)
        self.num_codevectors = self.quantizer.num_groups * self.quantizer.num_vars
        self.contrastive_logits_temperature = 0.1
        self.diversity_loss_weight = 0.1

    @staticmethod
    def compute_contrastive_logits(target_features, negative_features, predicted_features, temperature=0.1):
        target_features = torch.cat([target_features, negative_features], dim=0)
        logits = torch.cosine_similarity(predicted_features.float(), target_features.float(), dim=-1)
        logits = logits.type_as(target_features)
        return logits / temperature

    def forward(self, input_values, mask_time_indices, sampled_negative_indices):
        extract_features = self.feature_extractor(input_values).transpose(1, 2)
        norm_features = self.fp_layer_norm(extract_features)
        hidden_states = self.fp_dropout(self.fp_projection(norm_features))
        hidden_states[mask_time_indices] = self.masked_spec_embed.to(hidden_states.dtype)
        hidden_states = hidden_states + self.pos_conv_embed(hidden_states)
        hidden_states = self.fp_dropout(self.enc_layer_norm(hidden_states))
        for layer in self.layers:
            hidden_states = layer(hidden_states)
        transformer_features = self.project_hid(hidden_states)
        extract_features = self.dropout_features(norm_features)
        quantized_features, codevector_perplexity = self.quantizer(extract_features, mask_time_indices)
        quantized_features = self.project_q(quantized_features.to(self.project_q.weight.dtype))
        B, T, D = quantized_features.shape
        K = sampled_negative_indices.shape[-1]
        negative_quantized_features = quantized_features.view(-1, D)[sampled_negative_indices.long().view(-1)]
        negative_quantized_features = negative_quantized_features.view(B, T, K, D).permute(2, 0, 1, 3)
        logits = self.compute_contrastive_logits(quantized_features[None, :], negative_quantized_features,
                                                 transformer_features, self.contrastive_logits_temperature)
        neg_is_pos = (quantized_features == negative_quantized_features).all(-1)
        logits[1:][neg_is_pos] = float("-inf")
        logits = logits.transpose(0, 2).reshape(-1, logits.size(0))
        target = ((1 - mask_time_indices.long()) * -100).transpose(0, 1).flatten()
        contrastive_loss = F.cross_entropy(logits.float(), target, reduction="sum")
        diversity_loss = ((self.num_codevectors - codevector_perplexity) / self.num_codevectors) * \
            mask_time_indices.sum()
        loss = contrastive_loss + self.diversity_loss_weight * diversity_loss
        return loss, contrastive_loss.detach(), diversity_loss.detach()


# ----------------------------------------------------------------------------- SchNet

class ShiftedSoftplus(nn.Module):
    def __init__(self):
        super().__init__()
        self.shift = torch.log(torch.tensor(2.0)).item()

    def forward(self, x):
        return F.softplus(x) - self.shift


class GaussianSmearing(nn.Module):
    def __init__(self, start=0.0, stop=5.0, num_gaussians=32):
        super().__init__()
        offset = torch.linspace(start, stop, num_gaussians)
        self.coeff = -0.5 / (offset[1] - offset[0]).item() ** 2
        self.register_buffer("offset", offset)

    def forward(self, dist):
        dist = dist.view(-1, 1) - self.offset.view(1, -1)
        return torch.exp(self.coeff * torch.pow(dist, 2))


def scatter_sum(src, index, dim_size):
    """torch_scatter / PyG utils: index broadcast to src, scatter_add_ into zeros."""
    size = list(src.size())
    size[0] = dim_size
    index = index.view(-1, 1).expand_as(src)
    return src.new_zeros(size).scatter_add_(0, index, src)


class CFConv(nn.Module):
    def __init__(self, in_channels, out_channels, num_filters, filter_nn, cutoff):
        super().__init__()
        self.lin1 = nn.Linear(in_channels, num_filters, bias=False)
        self.lin2 = nn.Linear(num_filters, out_channels)
        self.nn = filter_nn
        self.cutoff = cutoff

    def forward(self, x, edge_index, edge_weight, edge_attr):
        C = 0.5 * (torch.cos(edge_weight * math.pi / self.cutoff) + 1.0)
        W = self.nn(edge_attr) * C.view(-1, 1)
        x = self.lin1(x)
        row, col = edge_index[0], edge_index[1]
        msg = x[row] * W                                 # x_j (source_to_target), aggregated at col
        x = scatter_sum(msg, col, x.size(0))
        return self.lin2(x)


class InteractionBlock(nn.Module):
    def __init__(self, hidden, num_gaussians, num_filters, cutoff):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(num_gaussians, num_filters), ShiftedSoftplus(),
                                 nn.Linear(num_filters, num_filters))
        self.conv = CFConv(hidden, hidden, num_filters, self.mlp, cutoff)
        self.act = ShiftedSoftplus()
        self.lin = nn.Linear(hidden, hidden)

    def forward(self, x, edge_index, edge_weight, edge_attr):
        x = self.conv(x, edge_index, edge_weight, edge_attr)
        return self.lin(self.act(x))


class SchNet(nn.Module):
    def __init__(self, hidden=64, num_filters=64, interactions=3, num_gaussians=32, cutoff=5.0, n_mol=16):
        super().__init__()
        self.n_mol = n_mol
        self.embedding = nn.Embedding(100, hidden, padding_idx=0)
        self.distance_expansion = GaussianSmearing(0.0, cutoff, num_gaussians)
        self.interactions = nn.ModuleList([InteractionBlock(hidden, num_gaussians, num_filters, cutoff)
                                           for _ in range(interactions)])
        self.lin1 = nn.Linear(hidden, hidden // 2)
        self.act = ShiftedSoftplus()
        self.lin2 = nn.Linear(hidden // 2, 1)
        self.charge = nn.Linear(hidden // 2, 1)
        self.atomref = nn.Embedding(100, 1)
        self.register_buffer("mean", torch.tensor(-3.0))
        self.register_buffer("std", torch.tensor(2.0))

    def forward(self, z, pos, batch, edge_index, energy, dipole):
        h = self.embedding(z)
        row, col = edge_index[0], edge_index[1]
        edge_weight = (pos[row] - pos[col]).norm(dim=-1)
        edge_attr = self.distance_expansion(edge_weight)
        for interaction in self.interactions:
            h = h + interaction(h, edge_index, edge_weight, edge_attr)
        h = self.act(self.lin1(h))
        e = self.lin2(h) * self.std + self.mean + self.atomref(z)
        out = torch.zeros(self.n_mol, 1, dtype=e.dtype, device=e.device).index_add_(0, batch, e)
        q = self.charge(h)
        counts = torch.zeros(self.n_mol, 1, dtype=q.dtype, device=q.device).index_add_(0, batch, torch.ones_like(q))
        q_mean = torch.zeros(self.n_mol, 1, dtype=q.dtype, device=q.device).index_add_(0, batch, q) / counts
        q = q - q_mean[batch]
        mu = torch.zeros(self.n_mol, 3, dtype=q.dtype, device=q.device).index_add_(0, batch, q * pos)
        loss = F.mse_loss(out.squeeze(-1), energy) + F.l1_loss(torch.norm(mu, dim=-1), dipole)
        return loss, out.detach()


# ----------------------------------------------------------------------------- TabNet

class Sparsemax(nn.Module):
    """Sparsemax with plain tensor ops (KrisKorrel/sparsemax), over dim=-1."""

    def forward(self, input):
        dim = -1
        number_of_logits = input.size(dim)
        input = input - torch.max(input, dim=dim, keepdim=True)[0].expand_as(input)
        zs = torch.sort(input=input, dim=dim, descending=True)[0]
        rng = torch.arange(start=1, end=number_of_logits + 1, step=1, device=input.device,
                           dtype=input.dtype).view(1, -1).expand_as(zs)
        bound = 1 + rng * zs
        cumulative_sum_zs = torch.cumsum(zs, dim)
        is_gt = torch.gt(bound, cumulative_sum_zs).type(input.type())
        k = torch.max(is_gt * rng, dim, keepdim=True)[0]
        zs_sparse = is_gt * zs
        taus = (torch.sum(zs_sparse, dim, keepdim=True) - 1) / k
        taus = taus.expand_as(input)
        return torch.max(torch.zeros_like(input), input - taus)


class GBN(nn.Module):
    def __init__(self, input_dim, virtual_batch_size=128, momentum=0.01):
        super().__init__()
        self.virtual_batch_size = virtual_batch_size
        self.bn = nn.BatchNorm1d(input_dim, momentum=momentum)

    def forward(self, x):
        chunks = x.chunk(int(math.ceil(x.shape[0] / self.virtual_batch_size)), 0)
        res = [self.bn(x_) for x_ in chunks]
        return torch.cat(res, dim=0)


class GLULayer(nn.Module):
    def __init__(self, input_dim, output_dim, fc=None, vbs=128):
        super().__init__()
        self.output_dim = output_dim
        self.fc = fc if fc is not None else nn.Linear(input_dim, 2 * output_dim, bias=False)
        self.bn = GBN(2 * output_dim, virtual_batch_size=vbs)

    def forward(self, x):
        x = self.bn(self.fc(x))
        return torch.mul(x[:, : self.output_dim], torch.sigmoid(x[:, self.output_dim:]))


class GLUBlock(nn.Module):
    def __init__(self, input_dim, output_dim, n_glu=2, first=False, shared_layers=None, vbs=128):
        super().__init__()
        self.first = first
        self.glu_layers = nn.ModuleList()
        for i in range(n_glu):
            fc = shared_layers[i] if shared_layers else None
            self.glu_layers.append(GLULayer(input_dim if i == 0 else output_dim, output_dim, fc=fc, vbs=vbs))

    def forward(self, x):
        scale = torch.sqrt(torch.FloatTensor([0.5]).to(x.device))
        if self.first:
            x = self.glu_layers[0](x)
            layers_left = range(1, len(self.glu_layers))
        else:
            layers_left = range(len(self.glu_layers))
        for glu_id in layers_left:
            x = torch.add(x, self.glu_layers[glu_id](x))
            x = x * scale
        return x


class FeatTransformer(nn.Module):
    def __init__(self, input_dim, output_dim, shared_layers, vbs):
        super().__init__()
        self.shared = GLUBlock(input_dim, output_dim, first=True, shared_layers=shared_layers, vbs=vbs)
        self.specifics = GLUBlock(output_dim, output_dim, first=False, vbs=vbs)

    def forward(self, x):
        return self.specifics(self.shared(x))


class AttentiveTransformer(nn.Module):
    def __init__(self, input_dim, group_dim, vbs):
        super().__init__()
        self.fc = nn.Linear(input_dim, group_dim, bias=False)
        self.bn = GBN(group_dim, virtual_batch_size=vbs)
        self.selector = Sparsemax()

    def forward(self, priors, processed_feat):
        x = self.bn(self.fc(processed_feat))
        x = torch.mul(x, priors)
        return self.selector(x)


class TabNet(nn.Module):
    def __init__(self, n_num=12, cat_dims=(7, 13), cat_emb=3, n_d=16, n_a=16, n_steps=3, gamma=1.3,
                 n_classes=4, vbs=128, lambda_sparse=1e-3):
        super().__init__()
        self.n_d, self.n_steps, self.gamma, self.epsilon, self.lambda_sparse = n_d, n_steps, gamma, 1e-15, lambda_sparse
        self.embeddings = nn.ModuleList([nn.Embedding(c, cat_emb) for c in cat_dims])
        input_dim = n_num + cat_emb * len(cat_dims)
        self.initial_bn = nn.BatchNorm1d(input_dim, momentum=0.01)
        shared = nn.ModuleList([nn.Linear(input_dim, 2 * (n_d + n_a), bias=False),
                                nn.Linear(n_d + n_a, 2 * (n_d + n_a), bias=False)])
        self.initial_splitter = FeatTransformer(input_dim, n_d + n_a, shared, vbs)
        self.feat_transformers = nn.ModuleList([FeatTransformer(input_dim, n_d + n_a, shared, vbs)
                                                for _ in range(n_steps)])
        self.att_transformers = nn.ModuleList([AttentiveTransformer(n_a, input_dim, vbs) for _ in range(n_steps)])
        self.final_mapping = nn.Linear(n_d, n_classes, bias=False)

    def forward(self, x_num, x_cat, y):
        cols = [x_num] + [emb(x_cat[:, i]) for i, emb in enumerate(self.embeddings)]
        x = self.initial_bn(torch.cat(cols, dim=1))
        prior = torch.ones(x.shape, device=x.device, dtype=x.dtype)
        M_loss = 0
        att = self.initial_splitter(x)[:, self.n_d:]
        steps_output = []
        for step in range(self.n_steps):
            M = self.att_transformers[step](prior, att)
            M_loss += torch.mean(torch.sum(torch.mul(M, torch.log(M + self.epsilon)), dim=1))
            prior = torch.mul(self.gamma - M, prior)
            masked_x = torch.mul(M, x)
            out = self.feat_transformers[step](masked_x)
            d = F.relu(out[:, : self.n_d])
            steps_output.append(d)
            att = out[:, self.n_d:]
        M_loss /= self.n_steps
        res = torch.sum(torch.stack(steps_output, dim=0), dim=0)
        logits = self.final_mapping(res)
        loss = F.cross_entropy(logits, y) - self.lambda_sparse * M_loss
        return loss, logits.detach()


# ----------------------------------------------------------------------------- DeepFM

class DeepFM(nn.Module):
    def __init__(self, field_dims=(100, 50, 200, 30, 80, 120), bag_vocab=(300, 150), n_dense=4, emb=16,
                 hidden=(128, 64), l2=1e-5):
        super().__init__()
        self.l2 = l2
        offsets = torch.tensor((0, *torch.cumsum(torch.tensor(field_dims), 0)[:-1].tolist()), dtype=torch.int64)
        self.register_buffer("field_offsets", offsets)
        total = sum(field_dims)
        self.embedding = nn.Embedding(total, emb)
        self.bag_genre = nn.EmbeddingBag(bag_vocab[0], emb, mode="sum")
        self.bag_tags = nn.EmbeddingBag(bag_vocab[1], emb, mode="sum")
        self.linear = nn.Embedding(total, 1)
        self.linear_bag = nn.EmbeddingBag(bag_vocab[0], 1, mode="sum")
        self.bias = nn.Parameter(torch.zeros((1,)))
        nn.init.normal_(self.embedding.weight, std=1e-4)
        nn.init.normal_(self.bag_genre.weight, std=1e-4)
        nn.init.normal_(self.bag_tags.weight, std=1e-4)
        n_fields = len(field_dims) + len(bag_vocab)
        layers, d = [], n_fields * emb + n_dense
        for h in hidden:
            layers += [nn.Linear(d, h), nn.BatchNorm1d(h), nn.ReLU(), nn.Dropout(0.2)]
            d = h
        layers.append(nn.Linear(d, 1, bias=False))
        self.dnn = nn.Sequential(*layers)

    def forward(self, sparse, genre_ids, genre_offsets, tag_ids, tag_offsets, tag_weights, dense, label):
        idx = sparse + self.field_offsets.unsqueeze(0)
        e_sparse = self.embedding(idx)                                           # B, F, E
        e_genre = self.bag_genre(genre_ids, genre_offsets).unsqueeze(1)
        e_tags = self.bag_tags(tag_ids, tag_offsets, per_sample_weights=tag_weights).unsqueeze(1)
        e = torch.cat([e_sparse, e_genre, e_tags], dim=1)
        first = torch.sum(self.linear(idx), dim=1) + self.linear_bag(genre_ids, genre_offsets) + self.bias
        square_of_sum = torch.pow(torch.sum(e, dim=1, keepdim=True), 2)
        sum_of_square = torch.sum(e * e, dim=1, keepdim=True)
        cross_term = 0.5 * torch.sum(square_of_sum - sum_of_square, dim=2)
        dnn_input = torch.cat([torch.flatten(e, start_dim=1), dense], dim=-1)
        logit = first + cross_term + self.dnn(dnn_input)
        y_pred = torch.sigmoid(logit).squeeze(-1)
        loss = F.binary_cross_entropy(y_pred, label, reduction="mean")
        reg = sum(torch.norm(w, p=2) for w in (self.embedding.weight, self.bag_genre.weight, self.bag_tags.weight))
        return loss + self.l2 * reg, y_pred.detach()


# ----------------------------------------------------------------------------- gMLP / FNet

class SpatialGatingUnit(nn.Module):
    def __init__(self, dim, dim_seq, causal=True, init_eps=1e-3, attn_dim=None):
        super().__init__()
        dim_out = dim // 2
        self.causal = causal
        self.norm = nn.LayerNorm(dim_out)
        self.proj = nn.Conv1d(dim_seq, dim_seq, 1)
        init_eps /= dim_seq
        nn.init.uniform_(self.proj.weight, -init_eps, init_eps)
        nn.init.constant_(self.proj.bias, 1.0)
        self.register_buffer("mask", torch.ones(dim_seq, dim_seq).triu_(1).bool(), persistent=False)
        self.attn = TinyAttention(dim, dim_out, attn_dim) if attn_dim is not None else None

    def forward(self, x, gate_res=None):
        n = x.shape[1]
        res, gate = x.chunk(2, dim=-1)
        gate = self.norm(gate)
        weight, bias = self.proj.weight, self.proj.bias
        if self.causal:
            weight, bias = weight[:n, :n], bias[:n]
            weight = weight.masked_fill(self.mask[:n, :n][..., None], 0.0)
        gate = F.conv1d(gate, weight, bias)
        if gate_res is not None:
            gate = gate + gate_res
        return gate * res


class TinyAttention(nn.Module):
    def __init__(self, dim_in, dim_out, dim_inner):
        super().__init__()
        self.scale = dim_inner ** -0.5
        self.to_qkv = nn.Linear(dim_in, dim_inner * 3, bias=False)
        self.to_out = nn.Linear(dim_inner, dim_out)

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        sim = torch.einsum("b i d, b j d -> b i j", q, k) * self.scale
        i, j = sim.shape[-2:]
        mask = torch.ones(i, j, device=x.device).triu_(j - i + 1).bool()
        sim = sim.masked_fill(mask[None, ...], -torch.finfo(q.dtype).max)
        attn = sim.softmax(dim=-1)
        return self.to_out(torch.einsum("b i j, b j d -> b i d", attn, v))


class GMLPBlock(nn.Module):
    def __init__(self, dim, dim_ff, seq_len, attn_dim=None):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.proj_in = nn.Sequential(nn.Linear(dim, dim_ff), nn.GELU())
        self.attn = TinyAttention(dim, dim_ff // 2, attn_dim) if attn_dim is not None else None
        self.sgu = SpatialGatingUnit(dim_ff, seq_len, causal=True)
        self.proj_out = nn.Linear(dim_ff // 2, dim)

    def forward(self, x):
        y = self.norm(x)
        gate_res = self.attn(y) if self.attn is not None else None
        y = self.proj_in(y)
        y = self.sgu(y, gate_res=gate_res)
        return x + self.proj_out(y)


class FNetBlock(nn.Module):
    def __init__(self, dim, dim_ff):
        super().__init__()
        self.mixing_layer_norm = nn.LayerNorm(dim)
        self.ff = nn.Sequential(nn.Linear(dim, dim_ff), nn.GELU(), nn.Linear(dim_ff, dim), nn.Dropout(0.1))
        self.output_layer_norm = nn.LayerNorm(dim)

    def forward(self, hidden_states):
        fft = torch.fft.fft(torch.fft.fft(hidden_states.float(), dim=-1), dim=-2).real
        hidden_states = self.mixing_layer_norm(fft.type_as(hidden_states) + hidden_states)
        return self.output_layer_norm(hidden_states + self.ff(hidden_states))


class GMLPLM(nn.Module):
    def __init__(self, vocab=512, dim=64, seq_len=64, depth=4):
        super().__init__()
        self.token_emb = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList([GMLPBlock(dim, 4 * dim, seq_len, attn_dim=32 if i % 2 else None)
                                     for i in range(depth)])
        self.fnet = FNetBlock(dim, 2 * dim)
        self.norm = nn.LayerNorm(dim)

    def forward(self, ids):
        x = self.token_emb(ids)
        for i, layer in enumerate(self.layers):
            x = layer(x)
            if i == 1:
                x = self.fnet(x)
        logits = F.linear(self.norm(x), self.token_emb.weight)
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.size(-1)), ids[:, 1:].reshape(-1))
        return loss


# ----------------------------------------------------------------------------- Nystromformer

def moore_penrose_iter_pinv(x, iters=6):
    device = x.device
    abs_x = torch.abs(x)
    col = abs_x.sum(dim=-1)
    row = abs_x.sum(dim=-2)
    z = x.transpose(-1, -2) / (torch.max(col) * torch.max(row))
    I = torch.eye(x.shape[-1], device=device, dtype=x.dtype).unsqueeze(0)
    for _ in range(iters):
        xz = x @ z
        z = 0.25 * z @ (13 * I - (xz @ (15 * I - (xz @ (7 * I - xz)))))
    return z


class NystromAttention(nn.Module):
    def __init__(self, dim, dim_head=16, heads=4, num_landmarks=32, pinv_iterations=6, residual_conv_kernel=33,
                 eps=1e-8, dropout=0.1):
        super().__init__()
        self.eps, self.heads, self.num_landmarks, self.pinv_iterations = eps, heads, num_landmarks, pinv_iterations
        inner_dim = heads * dim_head
        self.scale = dim_head ** -0.5
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Sequential(nn.Linear(inner_dim, dim), nn.Dropout(dropout))
        padding = residual_conv_kernel // 2
        self.res_conv = nn.Conv2d(heads, heads, (residual_conv_kernel, 1), padding=(padding, 0), groups=heads,
                                  bias=False)

    def forward(self, x, mask):
        b, n, _ = x.shape
        h, m, iters, eps = self.heads, self.num_landmarks, self.pinv_iterations, self.eps
        remainder = n % m
        if remainder > 0:
            padding = m - (n % m)
            x = F.pad(x, (0, 0, padding, 0), value=0)
            mask = F.pad(mask, (padding, 0), value=False)
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(b, -1, h, t.shape[-1] // h).transpose(1, 2) for t in (q, k, v))
        mask = mask[:, None, :, None]
        q, k, v = (t.masked_fill(~mask, 0.0) for t in (q, k, v))
        q = q * self.scale
        n_pad = q.shape[-2]
        l = math.ceil(n_pad / m)
        q_landmarks = q.reshape(b, h, n_pad // l, l, -1).sum(dim=-2)
        k_landmarks = k.reshape(b, h, n_pad // l, l, -1).sum(dim=-2)
        divisor = mask.squeeze(-1).reshape(b, 1, n_pad // l, l).sum(dim=-1)[..., None].to(q.dtype) + eps
        q_landmarks = q_landmarks / divisor
        k_landmarks = k_landmarks / divisor
        sim1 = torch.einsum("... i d, ... j d -> ... i j", q, k_landmarks)
        sim2 = torch.einsum("... i d, ... j d -> ... i j", q_landmarks, k_landmarks)
        sim3 = torch.einsum("... i d, ... j d -> ... i j", q_landmarks, k)
        mask_value = -torch.finfo(q.dtype).max
        sim1 = sim1.masked_fill(~mask.squeeze(-1)[..., None], mask_value)
        sim3 = sim3.masked_fill(~mask.squeeze(-1)[..., None, :], mask_value)
        attn1, attn2, attn3 = (t.softmax(dim=-1) for t in (sim1, sim2, sim3))
        attn2_inv = moore_penrose_iter_pinv(attn2, iters)
        out = (attn1 @ attn2_inv) @ (attn3 @ v)
        out = out + self.res_conv(v)
        out = out.transpose(1, 2).reshape(b, n_pad, -1)
        out = self.to_out(out)
        return out[:, -n:]


class Nystromformer(nn.Module):
    def __init__(self, in_dim=32, dim=64, depth=2, n_classes=10):
        super().__init__()
        self.embed = nn.Linear(in_dim, dim)
        self.layers = nn.ModuleList([nn.ModuleList([nn.LayerNorm(dim), NystromAttention(dim), nn.LayerNorm(dim),
                                                    nn.Sequential(nn.Linear(dim, 2 * dim), nn.GELU(),
                                                                  nn.Linear(2 * dim, dim))])
                                     for _ in range(depth)])
        self.head = nn.Linear(dim, n_classes)

    def forward(self, x, mask, y):
        x = self.embed(x)
        for ln1, attn, ln2, ff in self.layers:
            x = x + attn(ln1(x), mask)
            x = x + ff(ln2(x))
        m = mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * m).sum(1) / m.sum(1)
        return F.cross_entropy(self.head(pooled), y)


# ----------------------------------------------------------------------------- SAM mask decoder

class SamLayerNorm2d(nn.Module):
    def __init__(self, num_channels, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(num_channels))
        self.bias = nn.Parameter(torch.zeros(num_channels))
        self.eps = eps

    def forward(self, x):
        u = x.mean(1, keepdim=True)
        s = (x - u).pow(2).mean(1, keepdim=True)
        x = (x - u) / torch.sqrt(s + self.eps)
        return self.weight[:, None, None] * x + self.bias[:, None, None]


class PositionEmbeddingRandom(nn.Module):
    def __init__(self, num_pos_feats=32, scale=1.0):
        super().__init__()
        self.register_buffer("positional_encoding_gaussian_matrix", scale * torch.randn((2, num_pos_feats)))

    def _pe_encoding(self, coords):
        coords = 2 * coords - 1
        coords = coords @ self.positional_encoding_gaussian_matrix
        coords = 2 * math.pi * coords
        return torch.cat([torch.sin(coords), torch.cos(coords)], dim=-1)

    def forward(self, size):
        h, w = size
        device = self.positional_encoding_gaussian_matrix.device
        grid = torch.ones((h, w), device=device, dtype=self.positional_encoding_gaussian_matrix.dtype)
        y_embed = grid.cumsum(dim=0) - 0.5
        x_embed = grid.cumsum(dim=1) - 0.5
        y_embed = y_embed / h
        x_embed = x_embed / w
        pe = self._pe_encoding(torch.stack([x_embed, y_embed], dim=-1))
        return pe.permute(2, 0, 1)

    def forward_with_coords(self, coords_input, image_size):
        coords = coords_input.clone()
        coords[:, :, 0] = coords[:, :, 0] / image_size[1]
        coords[:, :, 1] = coords[:, :, 1] / image_size[0]
        return self._pe_encoding(coords.to(self.positional_encoding_gaussian_matrix.dtype))


class SamAttention(nn.Module):
    def __init__(self, embedding_dim, num_heads, downsample_rate=1):
        super().__init__()
        self.internal_dim = embedding_dim // downsample_rate
        self.num_heads = num_heads
        self.q_proj = nn.Linear(embedding_dim, self.internal_dim)
        self.k_proj = nn.Linear(embedding_dim, self.internal_dim)
        self.v_proj = nn.Linear(embedding_dim, self.internal_dim)
        self.out_proj = nn.Linear(self.internal_dim, embedding_dim)

    def _separate_heads(self, x, num_heads):
        b, n, c = x.shape
        x = x.reshape(b, n, num_heads, c // num_heads)
        return x.transpose(1, 2)

    def _recombine_heads(self, x):
        b, n_heads, n_tokens, c_per_head = x.shape
        x = x.transpose(1, 2)
        return x.reshape(b, n_tokens, n_heads * c_per_head)

    def forward(self, q, k, v):
        q = self._separate_heads(self.q_proj(q), self.num_heads)
        k = self._separate_heads(self.k_proj(k), self.num_heads)
        v = self._separate_heads(self.v_proj(v), self.num_heads)
        _, _, _, c_per_head = q.shape
        attn = q @ k.permute(0, 1, 3, 2)
        attn = attn / math.sqrt(c_per_head)
        attn = torch.softmax(attn, dim=-1)
        out = self._recombine_heads(attn @ v)
        return self.out_proj(out)


class TwoWayAttentionBlock(nn.Module):
    def __init__(self, dim, heads, mlp_dim, skip_first_layer_pe=False, downsample=2):
        super().__init__()
        self.self_attn = SamAttention(dim, heads)
        self.norm1 = nn.LayerNorm(dim)
        self.cross_attn_token_to_image = SamAttention(dim, heads, downsample_rate=downsample)
        self.norm2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, mlp_dim), nn.ReLU(), nn.Linear(mlp_dim, dim))
        self.norm3 = nn.LayerNorm(dim)
        self.norm4 = nn.LayerNorm(dim)
        self.cross_attn_image_to_token = SamAttention(dim, heads, downsample_rate=downsample)
        self.skip_first_layer_pe = skip_first_layer_pe

    def forward(self, queries, keys, query_pe, key_pe):
        if self.skip_first_layer_pe:
            queries = self.self_attn(q=queries, k=queries, v=queries)
        else:
            q = queries + query_pe
            queries = queries + self.self_attn(q=q, k=q, v=queries)
        queries = self.norm1(queries)
        q = queries + query_pe
        k = keys + key_pe
        queries = self.norm2(queries + self.cross_attn_token_to_image(q=q, k=k, v=keys))
        queries = self.norm3(queries + self.mlp(queries))
        q = queries + query_pe
        k = keys + key_pe
        keys = self.norm4(keys + self.cross_attn_image_to_token(q=k, k=q, v=queries))
        return queries, keys


class TwoWayTransformer(nn.Module):
    def __init__(self, depth, dim, heads, mlp_dim):
        super().__init__()
        self.layers = nn.ModuleList([TwoWayAttentionBlock(dim, heads, mlp_dim, skip_first_layer_pe=(i == 0))
                                     for i in range(depth)])
        self.final_attn_token_to_image = SamAttention(dim, heads, downsample_rate=2)
        self.norm_final_attn = nn.LayerNorm(dim)

    def forward(self, image_embedding, image_pe, point_embedding):
        image_embedding = image_embedding.flatten(2).permute(0, 2, 1)
        image_pe = image_pe.flatten(2).permute(0, 2, 1)
        queries, keys = point_embedding, image_embedding
        for layer in self.layers:
            queries, keys = layer(queries, keys, point_embedding, image_pe)
        q = queries + point_embedding
        k = keys + image_pe
        queries = self.norm_final_attn(queries + self.final_attn_token_to_image(q=q, k=k, v=keys))
        return queries, keys


class SamMLP(nn.Module):
    def __init__(self, input_dim, hidden_dim, output_dim, num_layers, sigmoid_output=False):
        super().__init__()
        h = [hidden_dim] * (num_layers - 1)
        self.layers = nn.ModuleList(nn.Linear(n, k) for n, k in zip([input_dim] + h, h + [output_dim]))
        self.num_layers = num_layers
        self.sigmoid_output = sigmoid_output

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = F.relu(layer(x)) if i < self.num_layers - 1 else layer(x)
        if self.sigmoid_output:
            x = torch.sigmoid(x)
        return x


class SamLite(nn.Module):
    def __init__(self, dim=64, image_size=64, num_multimask_outputs=3):
        super().__init__()
        self.image_size = image_size
        self.embed_hw = image_size // 4
        self.image_encoder = nn.Sequential(nn.Conv2d(3, dim, 4, 4), SamLayerNorm2d(dim), nn.GELU(),
                                           nn.Conv2d(dim, dim, 3, padding=1, bias=False), SamLayerNorm2d(dim))
        self.pe_layer = PositionEmbeddingRandom(dim // 2)
        self.point_embeddings = nn.ModuleList([nn.Embedding(1, dim) for _ in range(2)])
        self.not_a_point_embed = nn.Embedding(1, dim)
        self.no_mask_embed = nn.Embedding(1, dim)
        self.num_mask_tokens = num_multimask_outputs + 1
        self.iou_token = nn.Embedding(1, dim)
        self.mask_tokens = nn.Embedding(self.num_mask_tokens, dim)
        self.transformer = TwoWayTransformer(2, dim, 4, 2 * dim)
        self.output_upscaling = nn.Sequential(
            nn.ConvTranspose2d(dim, dim // 4, kernel_size=2, stride=2), SamLayerNorm2d(dim // 4), nn.GELU(),
            nn.ConvTranspose2d(dim // 4, dim // 8, kernel_size=2, stride=2), nn.GELU())
        self.output_hypernetworks_mlps = nn.ModuleList([SamMLP(dim, dim, dim // 8, 3)
                                                        for _ in range(self.num_mask_tokens)])
        self.iou_prediction_head = SamMLP(dim, 64, self.num_mask_tokens, 3)

    def _embed_points(self, points, labels):
        points = points + 0.5
        padding_point = torch.zeros((points.shape[0], 1, 2), device=points.device, dtype=points.dtype)
        padding_label = -torch.ones((labels.shape[0], 1), device=labels.device, dtype=labels.dtype)
        points = torch.cat([points, padding_point], dim=1)
        labels = torch.cat([labels, padding_label], dim=1)
        point_embedding = self.pe_layer.forward_with_coords(points, (self.image_size, self.image_size))
        point_embedding[labels == -1] = 0.0
        point_embedding[labels == -1] += self.not_a_point_embed.weight
        point_embedding[labels == 0] += self.point_embeddings[0].weight
        point_embedding[labels == 1] += self.point_embeddings[1].weight
        return point_embedding

    def forward(self, image, point_coords, point_labels, gt_masks):
        B, P = point_coords.shape[:2]
        image_embeddings = self.image_encoder(image)                             # B, C, h, w
        sparse = self._embed_points(point_coords.flatten(0, 1), point_labels.flatten(0, 1))   # B*P, n+1, C
        dense = self.no_mask_embed.weight.reshape(1, -1, 1, 1).expand(sparse.shape[0], -1, self.embed_hw,
                                                                      self.embed_hw)
        image_pe = self.pe_layer((self.embed_hw, self.embed_hw)).unsqueeze(0)
        output_tokens = torch.cat([self.iou_token.weight, self.mask_tokens.weight], dim=0)
        output_tokens = output_tokens.unsqueeze(0).expand(sparse.size(0), -1, -1)
        tokens = torch.cat((output_tokens, sparse), dim=1)
        src = torch.repeat_interleave(image_embeddings, P, dim=0)
        src = src + dense
        pos_src = torch.repeat_interleave(image_pe, tokens.shape[0], dim=0)
        b, c, h, w = src.shape
        hs, src = self.transformer(src, pos_src, tokens)
        iou_token_out = hs[:, 0, :]
        mask_tokens_out = hs[:, 1: (1 + self.num_mask_tokens), :]
        src = src.transpose(1, 2).view(b, c, h, w)
        upscaled_embedding = self.output_upscaling(src)
        hyper_in_list = [self.output_hypernetworks_mlps[i](mask_tokens_out[:, i, :])
                         for i in range(self.num_mask_tokens)]
        hyper_in = torch.stack(hyper_in_list, dim=1)
        b, c, h, w = upscaled_embedding.shape
        masks = (hyper_in @ upscaled_embedding.view(b, c, h * w)).view(b, -1, h, w)
        iou_pred = self.iou_prediction_head(iou_token_out)
        masks, iou_pred = masks[:, 1:], iou_pred[:, 1:]                          # multimask output
        masks = F.interpolate(masks, gt_masks.shape[-2:], mode="bilinear", align_corners=False)
        gt = gt_masks.flatten(0, 1).unsqueeze(1).expand_as(masks)              # B*P, 3, H, W
        prob = masks.sigmoid()
        ce = F.binary_cross_entropy_with_logits(masks, gt, reduction="none")
        p_t = prob * gt + (1 - prob) * (1 - gt)
        focal = (ce * ((1 - p_t) ** 2) * (0.25 * gt + 0.75 * (1 - gt))).flatten(2).mean(-1)
        numerator = 2 * (prob * gt).flatten(2).sum(-1)
        denominator = prob.flatten(2).sum(-1) + gt.flatten(2).sum(-1)
        dice = 1 - (numerator + 1) / (denominator + 1)
        per_mask = 20.0 * focal + dice                                           # B*P, 3
        best, best_idx = per_mask.min(dim=1)
        with torch.no_grad():
            binary = (masks > 0).to(masks.dtype)
            inter = (binary * gt).flatten(2).sum(-1)
            union = (binary + gt).clamp(max=1).flatten(2).sum(-1)
            iou_gt = inter / union.clamp(min=1)
        iou_loss = F.mse_loss(iou_pred.gather(1, best_idx[:, None]), iou_gt.gather(1, best_idx[:, None]))
        return best.mean() + iou_loss, iou_pred.detach()


# ----------------------------------------------------------------------------- NeRF, hierarchical sampling

class Embedder(nn.Module):
    def __init__(self, multires):
        super().__init__()
        self.register_buffer("freq_bands", 2.0 ** torch.linspace(0.0, multires - 1, steps=multires))
        self.out_dim = 3 + 3 * 2 * multires

    def forward(self, inputs):
        outs = [inputs]
        for i in range(self.freq_bands.shape[0]):
            freq = self.freq_bands[i]
            outs += [torch.sin(inputs * freq), torch.cos(inputs * freq)]
        return torch.cat(outs, -1)


class NeRFMLP(nn.Module):
    def __init__(self, D=6, W=64, input_ch=39, input_ch_views=15, skips=(3,)):
        super().__init__()
        self.skips = skips
        self.pts_linears = nn.ModuleList([nn.Linear(input_ch, W)] +
                                         [nn.Linear(W, W) if i not in skips else nn.Linear(W + input_ch, W)
                                          for i in range(D - 1)])
        self.views_linears = nn.ModuleList([nn.Linear(input_ch_views + W, W // 2)])
        self.feature_linear = nn.Linear(W, W)
        self.alpha_linear = nn.Linear(W, 1)
        self.rgb_linear = nn.Linear(W // 2, 3)
        self.input_ch = input_ch

    def forward(self, x):
        input_pts, input_views = torch.split(x, [self.input_ch, x.shape[-1] - self.input_ch], dim=-1)
        h = input_pts
        for i, l in enumerate(self.pts_linears):
            h = F.relu(self.pts_linears[i](h))
            if i in self.skips:
                h = torch.cat([input_pts, h], -1)
        alpha = self.alpha_linear(h)
        feature = self.feature_linear(h)
        h = torch.cat([feature, input_views], -1)
        for l in self.views_linears:
            h = F.relu(l(h))
        rgb = self.rgb_linear(h)
        return torch.cat([rgb, alpha], -1)


def raw2outputs(raw, z_vals, rays_d, raw_noise_std=1.0):
    dists = z_vals[..., 1:] - z_vals[..., :-1]
    dists = torch.cat([dists, torch.Tensor([1e10]).to(dists).expand(dists[..., :1].shape)], -1)
    dists = dists * torch.norm(rays_d[..., None, :], dim=-1)
    rgb = torch.sigmoid(raw[..., :3])
    noise = torch.randn(raw[..., 3].shape, dtype=raw.dtype, device=raw.device) * raw_noise_std
    alpha = 1.0 - torch.exp(-F.relu(raw[..., 3] + noise) * dists)
    weights = alpha * torch.cumprod(torch.cat([torch.ones((alpha.shape[0], 1), dtype=alpha.dtype,
                                                          device=alpha.device), 1.0 - alpha + 1e-10], -1),
                                    -1)[:, :-1]
    rgb_map = torch.sum(weights[..., None] * rgb, -2)
    acc_map = torch.sum(weights, -1)
    rgb_map = rgb_map + (1.0 - acc_map[..., None])                            # white background
    return rgb_map, weights


def sample_pdf(bins, weights, N_samples):
    weights = weights + 1e-5
    pdf = weights / torch.sum(weights, -1, keepdim=True)
    cdf = torch.cumsum(pdf, -1)
    cdf = torch.cat([torch.zeros_like(cdf[..., :1]), cdf], -1)
    u = torch.rand(list(cdf.shape[:-1]) + [N_samples], dtype=cdf.dtype, device=cdf.device)
    u = u.contiguous()
    inds = torch.searchsorted(cdf, u, right=True)
    below = torch.max(torch.zeros_like(inds - 1), inds - 1)
    above = torch.min((cdf.shape[-1] - 1) * torch.ones_like(inds), inds)
    inds_g = torch.stack([below, above], -1)
    matched_shape = [inds_g.shape[0], inds_g.shape[1], cdf.shape[-1]]
    cdf_g = torch.gather(cdf.unsqueeze(1).expand(matched_shape), 2, inds_g)
    bins_g = torch.gather(bins.unsqueeze(1).expand(matched_shape), 2, inds_g)
    denom = cdf_g[..., 1] - cdf_g[..., 0]
    denom = torch.where(denom < 1e-5, torch.ones_like(denom), denom)
    t = (u - cdf_g[..., 0]) / denom
    return bins_g[..., 0] + t * (bins_g[..., 1] - bins_g[..., 0])


class HierarchicalNeRF(nn.Module):
    def __init__(self, N_samples=32, N_importance=32, near=2.0, far=6.0, W=64):
        super().__init__()
        self.N_samples, self.N_importance, self.near, self.far = N_samples, N_importance, near, far
        self.embed_fn = Embedder(6)
        self.embeddirs_fn = Embedder(2)
        self.network_fn = NeRFMLP(D=4, W=W, input_ch=self.embed_fn.out_dim,
                                  input_ch_views=self.embeddirs_fn.out_dim, skips=(2,))
        self.network_fine = NeRFMLP(D=6, W=W, input_ch=self.embed_fn.out_dim,
                                    input_ch_views=self.embeddirs_fn.out_dim, skips=(3,))

    def run_network(self, pts, viewdirs, fn):
        inputs_flat = torch.reshape(pts, [-1, pts.shape[-1]])
        embedded = self.embed_fn(inputs_flat)
        input_dirs = viewdirs[:, None].expand(pts.shape)
        embedded = torch.cat([embedded, self.embeddirs_fn(torch.reshape(input_dirs, [-1, input_dirs.shape[-1]]))], -1)
        outputs_flat = fn(embedded)
        return torch.reshape(outputs_flat, list(pts.shape[:-1]) + [outputs_flat.shape[-1]])

    def forward(self, rays_o, rays_d, target_s):
        viewdirs = rays_d / torch.norm(rays_d, dim=-1, keepdim=True)
        N_rays = rays_o.shape[0]
        t_vals = torch.linspace(0.0, 1.0, steps=self.N_samples, dtype=rays_o.dtype, device=rays_o.device)
        z_vals = self.near * (1.0 - t_vals) + self.far * t_vals
        z_vals = z_vals.expand([N_rays, self.N_samples])
        mids = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
        upper = torch.cat([mids, z_vals[..., -1:]], -1)
        lower = torch.cat([z_vals[..., :1], mids], -1)
        t_rand = torch.rand(z_vals.shape, dtype=z_vals.dtype, device=z_vals.device)
        z_vals = lower + (upper - lower) * t_rand
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
        raw = self.run_network(pts, viewdirs, self.network_fn)
        rgb_map_0, weights = raw2outputs(raw, z_vals, rays_d)
        z_vals_mid = 0.5 * (z_vals[..., 1:] + z_vals[..., :-1])
        z_samples = sample_pdf(z_vals_mid, weights[..., 1:-1].detach(), self.N_importance)
        z_samples = z_samples.detach()
        z_vals, _ = torch.sort(torch.cat([z_vals, z_samples], -1), -1)
        pts = rays_o[..., None, :] + rays_d[..., None, :] * z_vals[..., :, None]
        raw = self.run_network(pts, viewdirs, self.network_fine)
        rgb_map, _ = raw2outputs(raw, z_vals, rays_d)
        img_loss = torch.mean((rgb_map - target_s) ** 2)
        img_loss0 = torch.mean((rgb_map_0 - target_s) ** 2)
        psnr = -10.0 * torch.log(img_loss.detach()) / torch.log(torch.Tensor([10.0]))
        return img_loss + img_loss0, psnr


# ----------------------------------------------------------------------------- Temporal Fusion Transformer

class GatedLinearUnit(nn.Module):
    def __init__(self, input_size, hidden_size, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(input_size, hidden_size * 2)

    def forward(self, x):
        return F.glu(self.fc(self.dropout(x)), dim=-1)


class GateAddNorm(nn.Module):
    def __init__(self, input_size, hidden_size, dropout=0.1):
        super().__init__()
        self.glu = GatedLinearUnit(input_size, hidden_size, dropout)
        self.norm = nn.LayerNorm(hidden_size)

    def forward(self, x, skip):
        return self.norm(self.glu(x) + skip)


class GatedResidualNetwork(nn.Module):
    def __init__(self, input_size, hidden_size, output_size, context_size=None, dropout=0.1):
        super().__init__()
        self.resample = nn.Linear(input_size, output_size) if input_size != output_size else None
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.elu = nn.ELU()
        self.context = nn.Linear(context_size, hidden_size, bias=False) if context_size is not None else None
        self.fc2 = nn.Linear(hidden_size, hidden_size)
        self.gate_norm = GateAddNorm(hidden_size, output_size, dropout)

    def forward(self, x, context=None):
        residual = self.resample(x) if self.resample is not None else x
        x = self.fc1(x)
        if context is not None:
            x = x + self.context(context)
        x = self.fc2(self.elu(x))
        return self.gate_norm(x, residual)


class VariableSelectionNetwork(nn.Module):
    def __init__(self, n_vars, hidden, context_size=None, dropout=0.1):
        super().__init__()
        self.n_vars, self.hidden = n_vars, hidden
        self.prescalers = nn.ModuleList([nn.Linear(1, hidden) for _ in range(n_vars)])
        self.flattened_grn = GatedResidualNetwork(n_vars * hidden, hidden, n_vars, context_size, dropout)
        self.single_variable_grns = nn.ModuleList([GatedResidualNetwork(hidden, hidden, hidden, None, dropout)
                                                   for _ in range(n_vars)])
        self.softmax = nn.Softmax(dim=-1)

    def forward(self, x, context=None):                                          # x: ..., n_vars
        embeddings = [self.prescalers[i](x[..., i: i + 1]) for i in range(self.n_vars)]
        flat = torch.cat(embeddings, dim=-1)
        sparse_weights = self.softmax(self.flattened_grn(flat, context)).unsqueeze(-2)
        var_outputs = torch.stack([self.single_variable_grns[i](e) for i, e in enumerate(embeddings)], dim=-1)
        outputs = (var_outputs * sparse_weights).sum(dim=-1)
        return outputs, sparse_weights


class ScaledDotProductAttention(nn.Module):
    def __init__(self, dropout=0.1):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        self.softmax = nn.Softmax(dim=2)

    def forward(self, q, k, v, mask=None):
        attn = torch.bmm(q, k.permute(0, 2, 1))
        attn = attn / torch.sqrt(torch.tensor(k.size(-1), dtype=attn.dtype, device=attn.device))
        if mask is not None:
            attn = attn.masked_fill(mask, -1e9)
        attn = self.dropout(self.softmax(attn))
        return torch.bmm(attn, v), attn


class InterpretableMultiHeadAttention(nn.Module):
    def __init__(self, n_head, d_model, dropout=0.1):
        super().__init__()
        self.n_head = n_head
        self.d_k = self.d_q = self.d_v = d_model // n_head
        self.dropout = nn.Dropout(dropout)
        self.v_layer = nn.Linear(d_model, self.d_v)
        self.q_layers = nn.ModuleList([nn.Linear(d_model, self.d_q) for _ in range(n_head)])
        self.k_layers = nn.ModuleList([nn.Linear(d_model, self.d_k) for _ in range(n_head)])
        self.attention = ScaledDotProductAttention()
        self.w_h = nn.Linear(self.d_v, d_model, bias=False)

    def forward(self, q, k, v, mask=None):
        heads, attns = [], []
        vs = self.v_layer(v)
        for i in range(self.n_head):
            head, attn = self.attention(self.q_layers[i](q), self.k_layers[i](k), vs, mask)
            heads.append(self.dropout(head))
            attns.append(attn)
        head = torch.stack(heads, dim=2) if self.n_head > 1 else heads[0]
        attn = torch.stack(attns, dim=2)
        outputs = torch.mean(head, dim=2) if self.n_head > 1 else head
        return self.dropout(self.w_h(outputs)), attn


class TemporalFusionTransformer(nn.Module):
    def __init__(self, n_static=20, n_past=4, n_known=3, hidden=32, heads=4, enc_len=24, dec_len=8,
                 quantiles=(0.1, 0.5, 0.9)):
        super().__init__()
        self.enc_len, self.dec_len, self.hidden = enc_len, dec_len, hidden
        self.static_embedding = nn.Embedding(n_static, hidden)
        self.static_variable_selection = GatedResidualNetwork(hidden, hidden, hidden)
        self.encoder_variable_selection = VariableSelectionNetwork(n_past + n_known, hidden, hidden)
        self.decoder_variable_selection = VariableSelectionNetwork(n_known, hidden, hidden)
        self.static_context_variable_selection = GatedResidualNetwork(hidden, hidden, hidden)
        self.static_context_initial_hidden_lstm = GatedResidualNetwork(hidden, hidden, hidden)
        self.static_context_initial_cell_lstm = GatedResidualNetwork(hidden, hidden, hidden)
        self.static_context_enrichment = GatedResidualNetwork(hidden, hidden, hidden)
        self.lstm_encoder = nn.LSTM(hidden, hidden, num_layers=1, batch_first=True)
        self.lstm_decoder = nn.LSTM(hidden, hidden, num_layers=1, batch_first=True)
        self.post_lstm_gate_encoder = GateAddNorm(hidden, hidden)
        self.post_lstm_gate_decoder = self.post_lstm_gate_encoder
        self.static_enrichment = GatedResidualNetwork(hidden, hidden, hidden, context_size=hidden)
        self.multihead_attn = InterpretableMultiHeadAttention(heads, hidden)
        self.post_attn_gate_norm = GateAddNorm(hidden, hidden, dropout=0.0)
        self.pos_wise_ff = GatedResidualNetwork(hidden, hidden, hidden)
        self.pre_output_gate_norm = GateAddNorm(hidden, hidden, dropout=0.0)
        self.output_layer = nn.Linear(hidden, len(quantiles))
        self.register_buffer("quantiles", torch.tensor(quantiles))

    @staticmethod
    def expand_static_context(context, timesteps):
        return context[:, None].expand(-1, timesteps, -1)

    def forward(self, static_cat, past_reals, known_reals, target):
        B = static_cat.shape[0]
        T = self.enc_len + self.dec_len
        static_embedding = self.static_embedding(static_cat)                     # B, H
        static_embedding = self.static_variable_selection(static_embedding)     # one variable: weight 1
        static_context_vs = self.expand_static_context(self.static_context_variable_selection(static_embedding), T)
        enc_in = torch.cat([past_reals, known_reals[:, : self.enc_len]], dim=-1)
        embeddings_varying_encoder, _ = self.encoder_variable_selection(enc_in, static_context_vs[:, : self.enc_len])
        embeddings_varying_decoder, _ = self.decoder_variable_selection(known_reals[:, self.enc_len:],
                                                                        static_context_vs[:, self.enc_len:])
        input_hidden = self.static_context_initial_hidden_lstm(static_embedding).expand(1, -1, -1).contiguous()
        input_cell = self.static_context_initial_cell_lstm(static_embedding).expand(1, -1, -1).contiguous()
        encoder_output, (hidden, cell) = self.lstm_encoder(embeddings_varying_encoder, (input_hidden, input_cell))
        decoder_output, _ = self.lstm_decoder(embeddings_varying_decoder, (hidden, cell))
        lstm_output_encoder = self.post_lstm_gate_encoder(encoder_output, embeddings_varying_encoder)
        lstm_output_decoder = self.post_lstm_gate_decoder(decoder_output, embeddings_varying_decoder)
        lstm_output = torch.cat([lstm_output_encoder, lstm_output_decoder], dim=1)
        static_context_enrichment = self.static_context_enrichment(static_embedding)
        attn_input = self.static_enrichment(lstm_output, self.expand_static_context(static_context_enrichment, T))
        decoder_mask = torch.triu(torch.ones(self.dec_len, T, dtype=torch.bool, device=attn_input.device),
                                  diagonal=self.enc_len + 1)
        attn_output, attn_weights = self.multihead_attn(q=attn_input[:, self.enc_len:], k=attn_input,
                                                        v=attn_input, mask=decoder_mask.unsqueeze(0).expand(B, -1, -1))
        attn_output = self.post_attn_gate_norm(attn_output, attn_input[:, self.enc_len:])
        output = self.pos_wise_ff(attn_output)
        output = self.pre_output_gate_norm(output, lstm_output[:, self.enc_len:])
        prediction = self.output_layer(output)                                   # B, dec, Q
        errors = target.unsqueeze(-1) - prediction
        losses = torch.max((self.quantiles - 1) * errors, self.quantiles * errors)
        return losses.mean(), attn_weights.detach()


# ----------------------------------------------------------------------------- distillation + R-Drop

class SmallCNN(nn.Module):
    def __init__(self, widths, n_classes=10, drop=0.0):
        super().__init__()
        layers, c = [], 3
        for i, w in enumerate(widths):
            layers += [nn.Conv2d(c, w, 3, stride=1 if i == 0 else 2, padding=1, bias=False), nn.BatchNorm2d(w),
                       nn.ReLU(inplace=True)]
            c = w
        self.features = nn.Sequential(*layers)
        self.drop = nn.Dropout(drop)
        self.fc = nn.Linear(c, n_classes)

    def forward(self, x):
        f = self.features(x)
        return f, self.fc(self.drop(torch.flatten(F.adaptive_avg_pool2d(f, 1), 1)))


class DistillRDrop(nn.Module):
    def __init__(self, T=4.0, alpha=0.5, rdrop=1.0):
        super().__init__()
        self.T, self.alpha, self.rdrop = T, alpha, rdrop
        self.teacher = SmallCNN([32, 64, 96, 128])
        self.teacher.requires_grad_(False)
        self.student = SmallCNN([16, 32, 48, 64], drop=0.3)
        self.hint = nn.Conv2d(64, 128, 1)

    def train(self, mode=True):
        super().train(mode)
        self.teacher.eval()
        return self

    def forward(self, x, y):
        with torch.no_grad():
            t_feat, t_logits = self.teacher(x)
        s_feat, s_logits = self.student(torch.cat([x, x], dim=0))
        l1, l2 = s_logits.chunk(2, dim=0)
        ce = 0.5 * (F.cross_entropy(l1, y, label_smoothing=0.1) + F.cross_entropy(l2, y, label_smoothing=0.1))
        lp1, lp2 = F.log_softmax(l1, dim=-1), F.log_softmax(l2, dim=-1)
        rdrop = 0.5 * (F.kl_div(lp1, lp2, reduction="batchmean", log_target=True) +
                       F.kl_div(lp2, lp1, reduction="batchmean", log_target=True))
        kd = F.kl_div(F.log_softmax(l1 / self.T, dim=-1), F.softmax(t_logits / self.T, dim=-1),
                      reduction="batchmean") * (self.T * self.T)
        hint = F.mse_loss(self.hint(s_feat[: x.shape[0]]), t_feat)
        loss = (1 - self.alpha) * ce + self.alpha * kd + self.rdrop * rdrop + hint
        return loss, {"ce": ce.detach(), "kd": kd.detach(), "rdrop": rdrop.detach()}


# ----------------------------------------------------------------------------- DANN

class GradientReversalFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, alpha):
        ctx.alpha = alpha
        return x.view_as(x)

    @staticmethod
    def backward(ctx, grad_output):
        return grad_output.neg() * ctx.alpha, None


class GradientReversal(nn.Module):
    def __init__(self, alpha=1.0):
        super().__init__()
        self.alpha = alpha

    def forward(self, x):
        return GradientReversalFunction.apply(x, self.alpha)


class DANN(nn.Module):
    def __init__(self, n_classes=10):
        super().__init__()
        self.feature_extractor = nn.Sequential(
            nn.Conv2d(3, 32, 5), nn.BatchNorm2d(32), nn.MaxPool2d(2), nn.ReLU(True),
            nn.Conv2d(32, 48, 5), nn.BatchNorm2d(48), nn.Dropout2d(), nn.MaxPool2d(2), nn.ReLU(True))
        self.class_classifier = nn.Sequential(nn.Linear(48, 100), nn.ReLU(True), nn.Linear(100, n_classes))
        self.domain_classifier = nn.Sequential(GradientReversal(0.5), nn.Linear(48, 100), nn.BatchNorm1d(100),
                                               nn.ReLU(True), nn.Linear(100, 1))

    def forward(self, x_src, y_src, x_tgt):
        x = torch.cat([x_src, x_tgt], 0)
        features = F.adaptive_avg_pool2d(self.feature_extractor(x), 1).flatten(1)
        class_output = self.class_classifier(features[: x_src.shape[0]])
        domain_output = self.domain_classifier(features).squeeze(-1)
        domain_label = torch.cat([torch.zeros(x_src.shape[0]), torch.ones(x_tgt.shape[0])]).to(domain_output)
        loss = F.cross_entropy(class_output, y_src) + F.binary_cross_entropy_with_logits(domain_output, domain_label)
        return loss


# ----------------------------------------------------------------------------- Sketch-RNN

class SketchRNN(nn.Module):
    def __init__(self, enc_hidden=64, dec_hidden=128, z_size=32, M=8, kl_min=0.2, wkl=0.5):
        super().__init__()
        self.M, self.kl_min, self.wkl, self.dec_hidden = M, kl_min, wkl, dec_hidden
        self.encoder = nn.LSTM(5, enc_hidden, bidirectional=True)
        self.fc_mu = nn.Linear(2 * enc_hidden, z_size)
        self.fc_sigma = nn.Linear(2 * enc_hidden, z_size)
        self.fc_hc = nn.Linear(z_size, 2 * dec_hidden)
        self.decoder = nn.LSTM(z_size + 5, dec_hidden)
        self.fc_params = nn.Linear(dec_hidden, 6 * M + 3)

    def forward(self, strokes, mask):                                            # strokes: L+1, B, 5 (SOS first)
        batch = strokes[1:]
        L, B = batch.shape[:2]
        _, (hidden, cell) = self.encoder(batch)
        hidden_forward, hidden_backward = torch.split(hidden, 1, 0)
        hidden_cat = torch.cat([hidden_forward.squeeze(0), hidden_backward.squeeze(0)], 1)
        mu = self.fc_mu(hidden_cat)
        sigma_hat = self.fc_sigma(hidden_cat)
        sigma = torch.exp(sigma_hat / 2.0)
        z = mu + sigma * torch.randn_like(sigma)
        hidden, cell = torch.split(torch.tanh(self.fc_hc(z)), self.dec_hidden, 1)
        hidden_cell = (hidden.unsqueeze(0).contiguous(), cell.unsqueeze(0).contiguous())
        z_stack = torch.stack([z] * L)
        inputs = torch.cat([strokes[:-1], z_stack], 2)
        outputs, _ = self.decoder(inputs, hidden_cell)
        y = self.fc_params(outputs.view(-1, self.dec_hidden))
        params = torch.split(y, 6, 1)
        params_mixture = torch.stack(params[:-1])                               # M, L*B, 6
        params_pen = params[-1]
        pi, mu_x, mu_y, sigma_x, sigma_y, rho_xy = torch.split(params_mixture, 1, 2)
        log_pi = F.log_softmax(pi.squeeze(-1).t(), dim=-1)                     # L*B, M
        mu_x, mu_y = mu_x.squeeze(-1).t(), mu_y.squeeze(-1).t()
        log_sx, log_sy = sigma_x.squeeze(-1).t(), sigma_y.squeeze(-1).t()
        sx, sy = torch.exp(log_sx), torch.exp(log_sy)
        rho = torch.tanh(rho_xy.squeeze(-1).t())
        dx = batch[..., 0].reshape(-1, 1)
        dy = batch[..., 1].reshape(-1, 1)
        zx, zy = (dx - mu_x) / sx, (dy - mu_y) / sy
        one_m_rho2 = 1 - rho ** 2 + 1e-6
        log_norm = -(zx ** 2 + zy ** 2 - 2 * rho * zx * zy) / (2 * one_m_rho2) \
            - math.log(2 * math.pi) - log_sx - log_sy - 0.5 * torch.log(one_m_rho2)
        log_p = torch.logsumexp(log_pi + log_norm, dim=-1).view(L, B)
        LS = -(log_p * mask).sum() / (L * B)
        pen_target = batch[..., 2:].reshape(-1, 3).argmax(-1)
        LP = F.cross_entropy(params_pen, pen_target)
        LKL = -0.5 * torch.mean(1 + sigma_hat - mu ** 2 - torch.exp(sigma_hat))
        LKL = torch.clamp(LKL, min=self.kl_min)
        return LS + LP + self.wkl * LKL, LKL.detach()


NAMES = ["tacotron2", "wav2vec2", "schnet", "tabnet", "deepfm", "gmlp_fnet", "nystromformer", "sam_decoder",
         "nerf_hier", "tft", "distill_rdrop", "dann_grl", "sketch_rnn"]


def wav2vec2_masks(B, T, g, mask_prob=0.3, span=4, K=8):
    """HF's _compute_mask_indices (spans of `span` frames) and _sample_negative_indices (K other frames
    of the same utterance, never the frame itself, offset by b * T)."""
    mask = torch.zeros((B, T), dtype=torch.bool)
    n_spans = max(1, int(mask_prob * T / span))
    for b in range(B):
        starts = torch.randperm(T - span, generator=g)[:n_spans]
        for s in starts.tolist():
            mask[b, s: s + span] = True
    idx = torch.randint(0, T - 1, (B, T, K), generator=g)
    frame = torch.arange(T)[None, :, None]
    idx = idx + (idx >= frame).long()                        # skip the frame itself
    idx = idx + (torch.arange(B) * T)[:, None, None]
    return mask, idx


def build(name, args, dtype):
    g = common.input_generator(args.seed)
    B = args.batch
    S = args.image
    if name == "tacotron2":
        L, T, n_mel = 24, 10, 20
        text = torch.randint(1, 40, (B, L), generator=g)
        lengths = L - torch.randint(0, 8, (B,), generator=g)
        lengths[0] = L
        text_mask = torch.arange(L)[None] < lengths[:, None]
        text = text * text_mask
        mels = common.float_input((B, n_mel, T), dtype, g)
        gate = torch.zeros((B, T), dtype=dtype)
        gate[:, -2:] = 1.0
        return Tacotron2(n_mel=n_mel), [text, text_mask, mels, gate]
    if name == "wav2vec2":
        samples = 4000                       # 99 frames after the feature encoder
        wav = common.float_input((B, samples), dtype, g)
        mask, neg = wav2vec2_masks(B, 99, g)
        return Wav2Vec2Lite(), [wav, mask, neg]
    if name == "schnet":
        n_mol, atoms = 4 * B, 12
        z = torch.randint(1, 10, (n_mol * atoms,), generator=g)
        pos = (1.5 * torch.randn((n_mol * atoms, 3), generator=g, dtype=torch.float64)).to(dtype)
        batch = torch.arange(n_mol).repeat_interleave(atoms)
        rows, cols = [], []
        for m in range(n_mol):
            p = pos[m * atoms:(m + 1) * atoms].double()
            d = torch.cdist(p, p)
            r, c = torch.nonzero((d < 5.0) & ~torch.eye(atoms, dtype=torch.bool), as_tuple=True)
            rows.append(r + m * atoms)
            cols.append(c + m * atoms)
        edge_index = torch.stack([torch.cat(rows), torch.cat(cols)])
        energy = common.float_input((n_mol,), dtype, g)
        dipole = torch.rand((n_mol,), generator=g, dtype=torch.float64).to(dtype)
        return SchNet(n_mol=n_mol), [z, pos, batch, edge_index, energy, dipole]
    if name == "tabnet":
        R = 128 * B
        x_cat = torch.stack([torch.randint(0, 7, (R,), generator=g), torch.randint(0, 13, (R,), generator=g)], 1)
        return TabNet(), [common.float_input((R, 12), dtype, g), x_cat, torch.randint(0, 4, (R,), generator=g)]
    if name == "deepfm":
        R = 256 * B
        dims = (100, 50, 200, 30, 80, 120)
        sparse = torch.stack([torch.randint(0, d, (R,), generator=g) for d in dims], 1)
        glen = torch.randint(1, 4, (R,), generator=g)
        genre_ids = torch.randint(0, 300, (int(glen.sum()),), generator=g)
        genre_off = torch.cat([torch.zeros(1, dtype=torch.int64), glen.cumsum(0)[:-1]])
        tlen = torch.randint(1, 6, (R,), generator=g)
        tag_ids = torch.randint(0, 150, (int(tlen.sum()),), generator=g)
        tag_off = torch.cat([torch.zeros(1, dtype=torch.int64), tlen.cumsum(0)[:-1]])
        tag_w = torch.rand((int(tlen.sum()),), generator=g, dtype=torch.float64).to(dtype)
        label = (torch.rand((R,), generator=g) < 0.3).to(dtype)
        return DeepFM(field_dims=dims), [sparse, genre_ids, genre_off, tag_ids, tag_off, tag_w,
                                         common.float_input((R, 4), dtype, g), label]
    if name == "gmlp_fnet":
        return GMLPLM(seq_len=64), [common.token_ids((2 * B, 64), 512, g)]
    if name == "nystromformer":
        n = 200
        lengths = n - torch.randint(0, 40, (B,), generator=g)
        lengths[0] = n
        mask = torch.arange(n)[None] < lengths[:, None]
        return Nystromformer(), [common.float_input((B, n, 32), dtype, g), mask, common.token_ids((B,), 10, g)]
    if name == "sam_decoder":
        side, P = 64, 2
        img = common.float_input((B, 3, side, side), dtype, g)
        coords = (torch.rand((B, P, 2, 2), generator=g, dtype=torch.float64) * side).to(dtype)
        labels = torch.randint(0, 2, (B, P, 2), generator=g)
        yy, xx = torch.meshgrid(torch.arange(side), torch.arange(side), indexing="ij")
        gts = []
        for _ in range(B * P):
            cy, cx, r = (torch.rand(3, generator=g) * torch.tensor([side, side, side / 3])).tolist()
            gts.append((((yy - cy) ** 2 + (xx - cx) ** 2) < (r + 4) ** 2).to(dtype))
        return SamLite(image_size=side), [img, coords, labels, torch.stack(gts).view(B, P, side, side)]
    if name == "nerf_hier":
        R = 128 * B
        rays_o = (torch.randn((R, 3), generator=g, dtype=torch.float64) * 0.1).to(dtype)
        rays_d = F.normalize(torch.randn((R, 3), generator=g, dtype=torch.float64), dim=-1).to(dtype)
        target = torch.rand((R, 3), generator=g, dtype=torch.float64).to(dtype)
        return HierarchicalNeRF(), [rays_o, rays_d, target]
    if name == "tft":
        Bt, enc, dec = 16 * B, 24, 8
        return TemporalFusionTransformer(enc_len=enc, dec_len=dec), [
            torch.randint(0, 20, (Bt,), generator=g), common.float_input((Bt, enc, 4), dtype, g),
            common.float_input((Bt, enc + dec, 3), dtype, g), common.float_input((Bt, dec), dtype, g)]
    if name == "distill_rdrop":
        side = max(32, (S * 2 // 3) // 16 * 16)                                 # 64 at --image 96
        return DistillRDrop(), [common.float_input((B, 3, side, side), dtype, g), common.token_ids((B,), 10, g)]
    if name == "dann_grl":
        side = 28
        return DANN(), [common.float_input((B, 3, side, side), dtype, g), common.token_ids((B,), 10, g),
                        common.float_input((B, 3, side, side), dtype, g)]
    if name == "sketch_rnn":
        L, Bs = 48, 8 * B
        lengths = L - torch.randint(0, 16, (Bs,), generator=g)
        lengths[0] = L
        steps = torch.arange(L)[:, None]
        d = 0.5 * torch.randn((L, Bs, 2), generator=g, dtype=torch.float64)
        pen = torch.where(torch.rand((L, Bs), generator=g) < 0.1, 1, 0)
        pen = torch.where(steps >= lengths[None] - 1, 2, pen)
        d = torch.where((steps >= lengths[None])[..., None], torch.zeros_like(d), d)
        strokes = torch.cat([d, F.one_hot(pen, 3).double()], -1)
        sos = torch.tensor([0.0, 0.0, 1.0, 0.0, 0.0], dtype=torch.float64).expand(1, Bs, 5)
        mask = (steps < lengths[None]).to(dtype)
        return SketchRNN(), [torch.cat([sos, strokes]).to(dtype), mask]
    common.die("unknown model %r (--list shows the names)" % name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    return common.model_set_main(argv, __doc__.splitlines()[0], "unseen11.pt", NAMES, build)


if __name__ == "__main__":
    sys.exit(main())
