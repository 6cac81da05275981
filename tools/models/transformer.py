#!/usr/bin/env python3
"""transformer.py — torch.nn.Transformer (encoder-decoder) with a small
d_model, exported with torch.jit.trace in train mode (dropout on).

Two inputs, src (src_seq x batch x d_model) and tgt (tgt_seq x batch x d_model),
both --dtype (batch first with --batch-first); the decoder gets a causal
target mask (a buffer of the wrapper module) unless --no-causal.
Output: the decoder output (tgt_seq x batch x d_model) through a linear head
(tgt_seq x batch x --head), as a seq2seq model's generator would. The head is
there because nn.Transformer ends with a LayerNorm of weight 1 and bias 0,
whose output sums to ~0 over the features, so with the plain loss
output.sum() every gradient upstream of it would be rounding noise;
--head 0 exports the bare nn.Transformer.
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import torch  # noqa: E402

nn = torch.nn


class Seq2Seq(nn.Module):
    """nn.Transformer plus its causal target mask, so that forward(src, tgt) is all."""

    def __init__(self, d_model, heads, enc_layers, dec_layers, ffn, dropout, tgt_seq, causal,
                 batch_first, norm_first, activation, head):
        super().__init__()
        self.transformer = nn.Transformer(d_model=d_model, nhead=heads, num_encoder_layers=enc_layers,
                                          num_decoder_layers=dec_layers, dim_feedforward=ffn,
                                          dropout=dropout, activation=activation,
                                          batch_first=batch_first, norm_first=norm_first)
        self.causal = causal
        self.head = nn.Linear(d_model, head) if head > 0 else nn.Identity()
        if causal:
            self.register_buffer("tgt_mask",
                                 nn.Transformer.generate_square_subsequent_mask(tgt_seq), persistent=False)

    def forward(self, src, tgt):
        if self.causal:
            # tgt_is_causal: the mask is causal by construction; without the hint
            # nn.Transformer compares the mask with a causal one (data-dependent
            # control flow, which torch.export refuses; the trace bakes it in).
            y = self.transformer(src, tgt, tgt_mask=self.tgt_mask.to(src.dtype), tgt_is_causal=True)
        else:
            y = self.transformer(src, tgt)
        return self.head(y)


def main(argv=None):
    p = common.make_parser(__doc__.splitlines()[0], "transformer.pt")
    p.add_argument("--d-model", type=common.positive_int, default=64,
                   help="model width (default %(default)s)")
    p.add_argument("--heads", type=common.positive_int, default=4,
                   help="attention heads; must divide --d-model (default %(default)s)")
    p.add_argument("--encoder-layers", type=common.nonneg_int, default=2,
                   help="encoder layers (default %(default)s)")
    p.add_argument("--decoder-layers", type=common.nonneg_int, default=2,
                   help="decoder layers (default %(default)s)")
    p.add_argument("--ffn", type=common.positive_int, default=128,
                   help="feed-forward width (default %(default)s)")
    p.add_argument("--src-seq", type=common.positive_int, default=32,
                   help="source sequence length (default %(default)s)")
    p.add_argument("--tgt-seq", type=common.positive_int, default=32,
                   help="target sequence length (default %(default)s)")
    p.add_argument("--batch", type=common.positive_int, default=4, help="batch size (default %(default)s)")
    p.add_argument("--dropout", type=common.probability, default=0.1,
                   help="dropout probability (default %(default)s)")
    p.add_argument("--activation", choices=["relu", "gelu"], default="relu",
                   help="feed-forward activation (default %(default)s)")
    p.add_argument("--head", type=common.nonneg_int, default=32,
                   help="output features of the linear head; 0: no head (default %(default)s)")
    p.add_argument("--no-causal", dest="causal", action="store_false",
                   help="no causal mask on the decoder's self-attention")
    p.add_argument("--batch-first", action="store_true", help="inputs are batch x seq x d_model")
    p.add_argument("--norm-first", action="store_true", help="pre-LN layers instead of post-LN")
    args = p.parse_args(argv)
    if args.d_model % args.heads:
        p.error("--heads %d must divide --d-model %d" % (args.heads, args.d_model))
    if args.encoder_layers == 0 or args.decoder_layers == 0:
        p.error("nn.Transformer needs at least one encoder and one decoder layer")
    common.setup(args)
    dtype = common.DTYPES[args.dtype]
    model = Seq2Seq(args.d_model, args.heads, args.encoder_layers, args.decoder_layers, args.ffn,
                    args.dropout, args.tgt_seq, args.causal, args.batch_first, args.norm_first,
                    args.activation, args.head).to(dtype).train()
    g = common.input_generator(args.seed)
    if args.batch_first:
        shapes = [(args.batch, args.src_seq, args.d_model), (args.batch, args.tgt_seq, args.d_model)]
    else:
        shapes = [(args.src_seq, args.batch, args.d_model), (args.tgt_seq, args.batch, args.d_model)]
    inputs = [common.float_input(s, dtype, g) for s in shapes]
    config = {k: getattr(args, k) for k in ("d_model", "heads", "encoder_layers", "decoder_layers", "ffn",
                                            "src_seq", "tgt_seq", "batch", "dropout", "activation",
                                            "causal", "batch_first", "norm_first", "head")}
    common.export(model, inputs, args, "nn_transformer", config)


if __name__ == "__main__":
    main()
