"""The torchvision converter: specs of a few transforms, refusals."""
import unittest

from tests.helpers import have

if have("torchvision"):
    import torchvision.transforms as T
    from refurb_stream.convert import pipeline_from_torchvision


@unittest.skipUnless(have("torchvision"), "torchvision is not installed")
class ConvertTest(unittest.TestCase):
    def test_the_classic_recipe(self):
        spec = pipeline_from_torchvision(T.Compose([
            T.Resize(256), T.RandAugment(num_ops=2, magnitude=9), T.RandomCrop(224),
            T.RandomHorizontalFlip()]))
        self.assertTrue(spec.startswith("resize=256"), spec)
        self.assertIn("randaug=", spec)
        self.assertIn("crop=224", spec)
        self.assertIn("flip", spec)

    def test_lambda_refused_by_name(self):
        with self.assertRaises(Exception) as e:
            pipeline_from_torchvision(T.Compose([T.Lambda(lambda x: x)]))
        self.assertIn("Lambda", str(e.exception))


if __name__ == "__main__":
    unittest.main()
