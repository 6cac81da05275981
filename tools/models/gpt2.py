#!/usr/bin/env python3
"""gpt2.py — a GPT-2 language model in plain torch.nn (no HuggingFace), exported
with torch.jit.trace in train mode (dropout on).

Structure as in GPT-2 / HuggingFace GPT2LMHeadModel: token + position embedding,
dropout, n blocks of [pre-LN causal self-attention (fused QKV projection, causal
mask, softmax, attention dropout, output projection, residual dropout) +
pre-LN MLP (4x width, GELU, projection, dropout)], final LayerNorm, LM head.
Input: token ids (batch x seq, int64). Output: logits (batch x seq x vocab).
"""

import math
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import torch  # noqa: E402

nn = torch.nn


class CausalSelfAttention(nn.Module):
    def __init__(self, width, heads, seq, dropout):
        super().__init__()
        self.heads = heads
        self.width = width
        self.head_size = width // heads
        self.scale = 1.0 / math.sqrt(self.head_size)  # a Python constant: no tensor->float in the trace
        self.c_attn = nn.Linear(width, 3 * width)
        self.c_proj = nn.Linear(width, width)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        # A buffer, as in GPT-2: lower-triangular mask of the longest sequence.
        self.register_buffer("causal_mask", torch.tril(torch.ones(seq, seq, dtype=torch.bool))
                             .view(1, 1, seq, seq), persistent=False)

    def forward(self, x):
        B, T = x.size(0), x.size(1)
        C, hs = self.width, self.head_size
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.heads, hs).transpose(1, 2)
        k = k.view(B, T, self.heads, hs).transpose(1, 2)
        v = v.view(B, T, self.heads, hs).transpose(1, 2)
        w = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        mask = self.causal_mask[:, :, :T, :T]
        w = w.masked_fill(~mask, float("-inf"))
        w = torch.softmax(w, dim=-1)
        w = self.attn_dropout(w)
        y = torch.matmul(w, v)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, width, dropout, gelu):
        super().__init__()
        self.c_fc = nn.Linear(width, 4 * width)
        self.act = nn.GELU(approximate=gelu)
        self.c_proj = nn.Linear(4 * width, width)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.act(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, width, heads, seq, dropout, gelu):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width)
        self.attn = CausalSelfAttention(width, heads, seq, dropout)
        self.ln_2 = nn.LayerNorm(width)
        self.mlp = MLP(width, dropout, gelu)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class GPT2(nn.Module):
    def __init__(self, vocab, seq, width, heads, layers, dropout, gelu="tanh", tie_weights=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, width)
        self.wpe = nn.Embedding(seq, width)
        # Positions as a buffer (as Hugging Face's GPT-2 does): it moves with the
        # module to the GPU, where torch.arange(device=idx.device) would stay on
        # the device the model was traced on (jit.trace bakes it in as a constant).
        self.register_buffer("pos_ids", torch.arange(seq, dtype=torch.long).unsqueeze(0), persistent=False)
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList([Block(width, heads, seq, dropout, gelu) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(width)
        self.lm_head = nn.Linear(width, vocab, bias=False)
        self.apply(self._init_weights)
        if tie_weights:
            self.lm_head.weight = self.wte.weight

    @staticmethod
    def _init_weights(m):
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, mean=0.0, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx):
        T = idx.size(1)
        pos = self.pos_ids[:, :T]
        x = self.drop(self.wte(idx) + self.wpe(pos))
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def main(argv=None):
    p = common.make_parser(__doc__.splitlines()[0], "gpt2.pt")
    p.add_argument("--layers", type=common.nonneg_int, default=2, help="blocks (default %(default)s)")
    p.add_argument("--width", type=common.positive_int, default=128,
                   help="embedding width (default %(default)s)")
    p.add_argument("--heads", type=common.positive_int, default=4,
                   help="attention heads; must divide --width (default %(default)s)")
    p.add_argument("--seq", type=common.positive_int, default=64,
                   help="sequence length (default %(default)s)")
    p.add_argument("--batch", type=common.positive_int, default=4, help="batch size (default %(default)s)")
    p.add_argument("--vocab", type=common.positive_int, default=1000,
                   help="vocabulary size (default %(default)s; GPT-2: 50257)")
    p.add_argument("--dropout", type=common.probability, default=0.1,
                   help="dropout probability of every dropout (default %(default)s)")
    p.add_argument("--gelu", choices=["tanh", "none"], default="tanh",
                   help="GELU approximation: tanh (GPT-2's gelu_new) or none (erf) (default %(default)s)")
    p.add_argument("--tie-weights", action="store_true",
                   help="share the LM head weight with the token embedding, as GPT-2 does")
    args = p.parse_args(argv)
    if args.width % args.heads:
        p.error("--heads %d must divide --width %d" % (args.heads, args.width))
    common.setup(args)
    dtype = common.DTYPES[args.dtype]
    model = GPT2(args.vocab, args.seq, args.width, args.heads, args.layers, args.dropout,
                 args.gelu, args.tie_weights).to(dtype).train()
    g = common.input_generator(args.seed)
    inputs = [common.token_ids((args.batch, args.seq), args.vocab, g)]
    config = {k: getattr(args, k) for k in
              ("layers", "width", "heads", "seq", "batch", "vocab", "dropout", "gelu", "tie_weights")}
    common.export(model, inputs, args, "gpt2", config)


if __name__ == "__main__":
    main()
