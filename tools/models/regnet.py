#!/usr/bin/env python3
"""regnet.py — a torchvision RegNet (default regnet_y_400mf), exported with
torch.jit.trace in train mode (batch norm in training mode).

--arch takes any torchvision regnet_* constructor; the Y variants have
squeeze-and-excitation blocks (adaptive average pool, sigmoid, multiply),
the X variants do not. Input: images (batch x 3 x size x size, --dtype).
Output: logits (batch x classes).
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

import torchvision  # noqa: E402

ARCHS = sorted(n for n in dir(torchvision.models) if n.startswith("regnet_"))


def main(argv=None):
    p = common.make_parser(__doc__.splitlines()[0], "regnet.pt")
    p.add_argument("--arch", choices=ARCHS, default="regnet_y_400mf",
                   help="torchvision RegNet (default %(default)s)")
    p.add_argument("--image", type=common.positive_int, default=64,
                   help="image height and width (default %(default)s)")
    p.add_argument("--batch", type=common.positive_int, default=4, help="batch size (default %(default)s)")
    p.add_argument("--classes", type=common.positive_int, default=10,
                   help="output classes (default %(default)s)")
    args = p.parse_args(argv)
    if args.image < 32:
        p.error("--image %d: RegNet downsamples 32x; use at least 32" % args.image)
    common.setup(args)
    dtype = common.DTYPES[args.dtype]
    model = getattr(torchvision.models, args.arch)(num_classes=args.classes).to(dtype).train()
    g = common.input_generator(args.seed)
    inputs = [common.float_input((args.batch, 3, args.image, args.image), dtype, g)]
    config = {"arch": args.arch, "image": args.image, "batch": args.batch, "classes": args.classes,
              "torchvision": torchvision.__version__}
    common.export(model, inputs, args, args.arch, config)


if __name__ == "__main__":
    main()
