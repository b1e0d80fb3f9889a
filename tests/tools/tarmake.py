#!/usr/bin/python3
"""tests/tools/tarmake.py OUT.tar [--format gnu|ustar|pax] NAME=SOURCE...

Write a tar file for the tests with Python's tarfile: member NAME holds
the bytes of the file SOURCE, or, for NAME=text:STRING, the bytes of
STRING.  Members are written in the order given; mtime 0, mode 0644.

tests/tools/tarmake.py --list SHARD...  prints, per regular member of
each shard, "SHARD<TAB>NAME<TAB>OFFSET_DATA<TAB>SIZE" as tarfile sees it.
"""
import io
import sys
import tarfile

FORMATS = {"gnu": tarfile.GNU_FORMAT, "ustar": tarfile.USTAR_FORMAT,
           "pax": tarfile.PAX_FORMAT}


def main(argv):
    if argv[0] == "--list":
        for shard in argv[1:]:
            with tarfile.open(shard, "r:") as t:
                for m in t.getmembers():
                    if m.isfile():
                        print("%s\t%s\t%d\t%d" % (shard, m.name, m.offset_data,
                                                  m.size))
        return 0
    out, fmt, specs = argv[0], "gnu", argv[1:]
    if specs and specs[0] == "--format":
        fmt, specs = specs[1], specs[2:]
    with tarfile.open(out, "w", format=FORMATS[fmt]) as tar:
        for spec in specs:
            name, src = spec.split("=", 1)
            if src.startswith("text:"):
                data = src[5:].encode()
            else:
                with open(src, "rb") as f:
                    data = f.read()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            tar.addfile(info, io.BytesIO(data))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
