"""python3 -m refurb_stream check STREAM: verify a batch stream."""
import sys

from refurb_stream import main

sys.exit(main(sys.argv))
