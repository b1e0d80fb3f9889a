"""refurb_stream's numpy reader: CRC-32C, the HEADER type, frames."""
import io
import unittest

from tests.helpers import have, stream_file

if have("numpy"):
    import numpy as np
    import refurb_stream
    from refurb_stream import Header, StreamError, Truncated, open_stream


@unittest.skipUnless(have("numpy"), "numpy is not installed")
class CrcTest(unittest.TestCase):
    def test_check_value(self):
        # the CRC-32C check value of "123456789" (RFC 3720)
        self.assertEqual(refurb_stream.crc32c(b"123456789"), 0xE3069283)

    def test_numpy_lanes_equal_the_table_loop(self):
        data = np.random.default_rng(7).integers(0, 256, 100003, dtype=np.uint8)
        by_table = refurb_stream._crc_raw(0xFFFFFFFF, data.tobytes()) ^ 0xFFFFFFFF
        self.assertEqual(refurb_stream.crc32c(data), by_table)

    def test_continued(self):
        crc = refurb_stream.crc32c
        data = bytes(range(256)) * 40
        self.assertEqual(crc(data[5000:], crc(data[:5000])), crc(data))


@unittest.skipUnless(have("numpy"), "numpy is not installed")
class HeaderTest(unittest.TestCase):
    def header(self, **kw):
        values = dict(dtype=np.dtype(np.uint8), layout="NHWC", height=4, width=6, channels=3,
                      batch_size=2, classes=["a", "b"], first_epoch=0, last_epoch=1,
                      first_step=0, shard_k=0, shard_n=1, epoch_images=4, plan_seed=7,
                      augment_seed=7, index_identity=1, mean=None, std=None,
                      partial_pipeline="", final_pipeline="", extra={}, views=2)
        values.update(kw)
        return Header(*(values[n] for n in Header.FIELDS))

    def test_a_plain_class_not_a_tuple(self):
        h = self.header()
        self.assertNotIsInstance(h, tuple)
        self.assertEqual(h.classes, ["a", "b"])
        self.assertIn("height=4", repr(h))

    def test_bytes_of_an_image_and_a_sample(self):
        h = self.header()
        self.assertEqual(h.image_bytes, 4 * 6 * 3)
        self.assertEqual(h.sample_bytes, 4 * 6 * 3 * 2)
        self.assertEqual(self.header(dtype=np.dtype("<f4"), views=1).sample_bytes, 4 * 6 * 3 * 4)

    def test_wrong_count_of_values(self):
        with self.assertRaises(TypeError):
            Header(1, 2, 3)


@unittest.skipUnless(have("numpy"), "numpy is not installed")
class StreamTest(unittest.TestCase):
    def test_batches_of_a_written_stream(self):
        path = stream_file(self, "-n", "10", "-b", "4", "-e", "0-1", "-H", "8", "-W", "6")
        with open_stream(path) as s:
            self.assertIsInstance(s.header, Header)
            self.assertEqual((s.header.height, s.header.width, s.header.batch_size), (8, 6, 4))
            batches = [(epoch, step, images.shape, len(labels))
                       for images, labels, ids, epoch, step in s]
        self.assertEqual(batches, [(0, 0, (4, 8, 6, 3), 4), (0, 1, (4, 8, 6, 3), 4),
                                   (0, 2, (2, 8, 6, 3), 2), (1, 0, (4, 8, 6, 3), 4),
                                   (1, 1, (4, 8, 6, 3), 4), (1, 2, (2, 8, 6, 3), 2)])

    def test_not_a_stream(self):
        with self.assertRaises(StreamError):
            open_stream(io.BytesIO(b"not a refurb stream at all" * 10))

    def test_cut_before_the_end(self):
        path = stream_file(self, "-n", "10", "-b", "4", "-e", "0-0")
        with open(path, "rb") as f:
            data = f.read()
        s = open_stream(io.BytesIO(data[:len(data) - 20]))
        with self.assertRaises(Truncated):
            for _ in s:
                pass


if __name__ == "__main__":
    unittest.main()
