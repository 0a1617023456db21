"""Training data and checkpoints over S3 from a Weft spoke: S3Dataset and
WeftSampler (whose order the spoke fetches ahead), save_checkpoint and
load_checkpoint. Needs boto3; uses torch when it imports."""

from .checkpoint import load_checkpoint, save_checkpoint
from .dataset import S3Dataset
from .sampler import WeftSampler

__all__ = ["S3Dataset", "WeftSampler", "save_checkpoint", "load_checkpoint"]
