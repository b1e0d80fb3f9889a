"""python3 -m refurb_stream check STREAM: verify a batch stream.
python3 -m refurb_stream convert EXPRESSION: a torchvision transform as a
refurb pipeline spec (refurb_stream.convert)."""
import sys

from refurb_stream import main

if len(sys.argv) >= 2 and sys.argv[1] == "convert":
    from refurb_stream.convert import main as convert_main

    sys.exit(convert_main(sys.argv[2:]))
sys.exit(main(sys.argv))
