"""Training data and checkpoints over S3 from a Weft spoke: S3Dataset and
WeftSampler (whose order the spoke fetches ahead), save_checkpoint,
CheckpointSaver (the same in the background) and load_checkpoint. Uses
boto3 where it imports, else the standard library (transport="http":
presigned URLs, or anonymous for a public-read export); uses torch when it
imports."""

from ._http import S3Error
from .checkpoint import CheckpointSaver, load_checkpoint, save_checkpoint
from .dataset import S3Dataset
from .sampler import WeftSampler

__all__ = ["S3Dataset", "WeftSampler", "save_checkpoint", "CheckpointSaver", "load_checkpoint", "S3Error"]
