"""Is oneDNN's LSTM layer (aten::mkldnn_rnn_layer, what a float32 nn.LSTM
runs on CPU) reproduced bit for bit by one call per time step (seq_len 1,
h and c chained)?  Compares the output and the gradients of the input and
of the four weights and biases with one call over the whole sequence
(issue 21: why rkmate splits float32 LSTMs into layers only, docs/zoo.md).

    .venv/bin/python tools/bench/lstm_steps.py [--steps 16] [--batch 4] [--width 32]
"""
import argparse

import torch


def layer(x, w, h0, c0, hidden, split):
    args = (False, [], 2, hidden, 1, True, False, False, True)  # reverse, batch sizes, LSTM, ..., train
    if not split:
        out, hy, cy, _ = torch.ops.aten.mkldnn_rnn_layer(x, *w, h0, c0, *args)
        return out
    h, c, outs = h0, c0, []
    for t in range(x.shape[0]):
        o, h, c, _ = torch.ops.aten.mkldnn_rnn_layer(x[t:t + 1].contiguous(), *w, h, c, *args)
        outs.append(o)
    return torch.cat(outs, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=16)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--width", type=int, default=32)
    a = ap.parse_args()
    T, B, D = a.steps, a.batch, a.width
    res = {}
    for split in (False, True):
        g = torch.Generator().manual_seed(1)
        x = torch.randn(T, B, D, generator=g).requires_grad_()
        w = [torch.randn(4 * D, D, generator=g), torch.randn(4 * D, D, generator=g),
             torch.randn(4 * D, generator=g), torch.randn(4 * D, generator=g)]
        for t in w:
            t.requires_grad_()
        out = layer(x, w, torch.zeros(B, D), torch.zeros(B, D), D, split)
        out.sum().backward()
        res[split] = [out.detach()] + [t.grad.clone() for t in [x] + w]
    names = ["output", "grad input", "grad w_ih", "grad w_hh", "grad b_ih", "grad b_hh"]
    for n, whole, steps in zip(names, res[False], res[True]):
        d = (whole - steps).abs().max().item()
        print(f"{n:12s} equal {str(torch.equal(whole, steps)):5s}  max abs diff {d:.3g}  "
              f"max rel diff {d / whole.abs().max().item():.3g}")


if __name__ == "__main__":
    main()
