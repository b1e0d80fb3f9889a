"""Shared by the unit tests of refurb_stream: the module from this tree,
and streams written by the build's write_stream tool (tests/tools/)."""
import os
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(TOP, "python"))
BUILD = os.environ.get("REFURB_BUILD", os.path.join(TOP, "build"))
WRITE_STREAM = os.path.join(BUILD, "tools", "write_stream")


def have(module):
    try:
        __import__(module)
        return True
    except ImportError:
        return False


def stream_file(test, *args):
    """A stream written by write_stream ARGS into a file removed after test."""
    if not os.access(WRITE_STREAM, os.X_OK):
        raise unittest.SkipTest("no %s (make all)" % WRITE_STREAM)
    fd, path = tempfile.mkstemp(suffix=".stream")
    os.close(fd)
    test.addCleanup(os.unlink, path)
    subprocess.run([WRITE_STREAM, *args, "-o", path], check=True)
    return path
