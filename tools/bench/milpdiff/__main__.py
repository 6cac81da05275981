import os
import sys

from .harness import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.exit(main(sys.argv[1:], ROOT))
