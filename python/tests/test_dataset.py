"""RefurbDataset (torch): the batches it yields, the DataLoader rule,
and no walking into torch's private classes."""
import inspect
import unittest

from tests.helpers import have, stream_file

if have("torch") and have("numpy"):
    import torch
    import torch.utils.data
    from refurb_stream import dataset
    from refurb_stream.dataset import Batch, RefurbDataset


@unittest.skipUnless(have("torch") and have("numpy"), "torch is not installed")
class DatasetTest(unittest.TestCase):
    def test_batches_of_one_epoch(self):
        ds = RefurbDataset(stream_file(self, "-n", "10", "-b", "4", "-e", "0-1"))
        shapes = [(type(b), tuple(b.images.shape), b.labels.dtype) for b in ds]
        self.assertEqual([s[1][0] for s in shapes], [4, 4, 2])
        self.assertTrue(all(t is Batch and d == torch.int64 for t, _, d in shapes))
        self.assertEqual(ds.state_dict()["epoch"], 1)

    def test_dataloader_batch_size_none(self):
        ds = RefurbDataset(stream_file(self, "-n", "10", "-b", "4", "-e", "0-0"))
        sizes = [len(y) for x, y in torch.utils.data.DataLoader(ds, batch_size=None)]
        self.assertEqual(sizes, [4, 4, 2])

    def test_default_dataloader_refused(self):
        ds = RefurbDataset(stream_file(self, "-n", "10", "-b", "4", "-e", "0-0"))
        with self.assertRaisesRegex(ValueError, r"DataLoader\(ds, batch_size=None\)"):
            for _ in torch.utils.data.DataLoader(ds):
                pass

    def test_batch_refuses_labels_batched_again(self):
        with self.assertRaises(ValueError):
            Batch(torch.zeros(1, 4, 2, 2, 3), torch.zeros(1, 4, dtype=torch.int64))

    def test_no_private_torch(self):
        src = inspect.getsource(dataset)
        self.assertNotIn("_getframe", src)
        self.assertNotIn("_BaseDataLoaderIter", src)


if __name__ == "__main__":
    unittest.main()
